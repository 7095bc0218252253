// A tensor type whose element count or byte size does not fit in int64 is an error naming
// the type, wherever it appears (op results, function arguments and results, declarations),
// before any pass computes its size (MLIR asserts on the overflow).
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{'func.func' op type 'tensor<4294967296x4294967296xf32>' has 18446744073709551616 elements, more than a 64-bit size can count (at most 9223372036854775807)}}
func.func @argument_elements(%x: tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32> {
  // expected-error @+1 {{'rlx.neg' op type 'tensor<4294967296x4294967296xf32>' has 18446744073709551616 elements}}
  %0 = "rlx.neg"(%x) : (tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32>
  return %0 : tensor<4294967296x4294967296xf32>
}

// -----

// 2^61 f32 elements: the count fits, the 2^63 bytes do not.
// expected-error @+1 {{'func.func' op type 'tensor<2305843009213693952xf32>' takes 9223372036854775808 bytes, more than a 64-bit size can count}}
func.func private @declared_result(tensor<2xf32>) -> tensor<2305843009213693952xf32>

// -----

func.func @op_result(%x: tensor<1x1xf32>) -> tensor<1x1xf32> {
  // expected-error @+1 {{'rlx.expand' op type 'tensor<3037000500x3037000500xf32>' has 9223372037000250000 elements}}
  %0 = "rlx.expand"(%x) {shape = array<i64: 3037000500, 3037000500>} : (tensor<1x1xf32>) -> tensor<3037000500x3037000500xf32>
  return %x : tensor<1x1xf32>
}

// -----

// The largest sizes that fit are accepted: 2^61 - 1 f32 elements, and 2^63 - 1 bytes of i8.
func.func private @largest(tensor<2305843009213693951xf32>, tensor<9223372036854775807xi8>) -> tensor<?x4611686018427387904xi8>
