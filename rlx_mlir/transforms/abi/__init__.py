"""Transforms abi."""
