// A bf16 function: its arguments and results are ml_dtypes bfloat16 arrays.
func.func @f(%a: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = "rlx.neg"(%a) : (tensor<4xbf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}
