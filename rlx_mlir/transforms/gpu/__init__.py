"""Transforms gpu."""
