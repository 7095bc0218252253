"""Transforms on HIR (dialect rlx_hir): outlining repeated blocks."""
