// An i8 and an i64 argument: what rlx-run's integer literals reach (a widened, b as given).
func.func @ints(%a: tensor<2xi8> {rlx.name = "a"}, %b: tensor<2xi64> {rlx.name = "b"}) -> (tensor<2xi64>, tensor<2xi64>) {
  %c = "rlx.cast"(%a) : (tensor<2xi8>) -> tensor<2xi64>
  %d = "rlx.bitwise_or"(%b, %b) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %c, %d : tensor<2xi64>, tensor<2xi64>
}
