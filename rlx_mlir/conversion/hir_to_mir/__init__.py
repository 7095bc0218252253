"""rlx-hir-to-mir: each HIR block (dialect rlx_hir) expanded into the MIR ops it stands for.

`expansions` holds one expansion per HIR op; `hir_to_mir` is the pass."""
