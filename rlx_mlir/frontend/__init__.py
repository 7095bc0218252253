"""The Python builder."""
