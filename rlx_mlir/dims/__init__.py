"""Symbolic dimensions: sizes written in symbols (`BATCH*SEQ`), verified, derived and bound.

`expr` parses and evaluates dimension expressions; `dynamic` reads, checks and binds the `rlx.dims`
annotations of a function; `derive` works out the dims of ops built on symbolic shapes (the builder's
side); `variants` names shape buckets (`ModelVariant`).

Layer: above `dsl` (op field views); imports only `errors`, `ir`, `dsl`."""
