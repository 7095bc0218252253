"""Conversions."""
