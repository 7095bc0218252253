"""Passes and pipelines."""
