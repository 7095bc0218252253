"""Transforms mir."""
