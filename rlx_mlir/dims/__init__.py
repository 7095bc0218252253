"""Symbolic dimensions."""
