"""Transforms linalg."""
