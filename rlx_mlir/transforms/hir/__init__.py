"""Transforms hir."""
