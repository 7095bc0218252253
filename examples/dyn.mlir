// A dynamic function: x is [BATCH, SEQ, 8]; rlx-run binds BATCH and SEQ from its inputs or --bind.
func.func @scale_rows(%x: tensor<?x?x8xf32> {rlx.name = "x", rlx.dims = ["BATCH", "SEQ", 8]},
                      %s: tensor<8xf32> {rlx.name = "s"}) -> tensor<?x?x8xf32> {
  %0 = "rlx.mul"(%x, %s) : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}
