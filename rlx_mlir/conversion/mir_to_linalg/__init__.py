"""rlx-mir-to-linalg: MIR ops to linalg / tensor / arith / math on tensors.

One module per op family (`elementwise`, `linalg`, `norm`, `attention`, ...), each with a `LOWERINGS`
table keyed by op class; `lowerings` merges them, `builders` holds the IR-building helpers they share,
`mir_to_linalg` is the pass."""
