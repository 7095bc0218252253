// A result tied to an argument (rlx.tied) must be that argument updated in
// place; when bufferization has to copy it (the old cache is read after the
// write), rlx-drop-tied-results reports it instead of copying the cache.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics --rlx-lower-to-llvm

func.func @old_cache_read_after_write(%q: tensor<1x1x8xf32>, %k: tensor<1x1x8xf32>, %cache: tensor<1x16x8xf32>, %pos: tensor<i64>)
    -> (tensor<1x1x8xf32>, tensor<1x16x8xf32> {rlx.tied = 2 : i64}) {
  %new = "rlx.kv_cache_write"(%cache, %k, %pos) : (tensor<1x16x8xf32>, tensor<1x1x8xf32>, tensor<i64>) -> tensor<1x16x8xf32>
  %o = "rlx.cached_attention"(%q, %cache, %cache, %pos) {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x1x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>, tensor<i64>) -> tensor<1x1x8xf32>
  // expected-error @+1 {{result #1 is tied to argument #2 (rlx.tied), but bufferization did not update that argument in place (is it read after it is written?)}}
  return %o, %new : tensor<1x1x8xf32>, tensor<1x16x8xf32>
}

// -----

func.func @tied_to_another_argument(%k: tensor<1x1x8xf32>, %cache: tensor<1x16x8xf32>, %other: tensor<1x16x8xf32>, %pos: tensor<i64>)
    -> (tensor<1x16x8xf32> {rlx.tied = 2 : i64}) {
  %new = "rlx.kv_cache_write"(%cache, %k, %pos) : (tensor<1x16x8xf32>, tensor<1x1x8xf32>, tensor<i64>) -> tensor<1x16x8xf32>
  // expected-error @+1 {{result #0 is tied to argument #2 (rlx.tied), but bufferization did not update that argument in place}}
  return %new : tensor<1x16x8xf32>
}

// -----

func.func @tied_out_of_range(%k: tensor<1x1x8xf32>, %cache: tensor<1x16x8xf32>, %pos: tensor<i64>)
    -> (tensor<1x16x8xf32> {rlx.tied = 5 : i64}) {
  %new = "rlx.kv_cache_write"(%cache, %k, %pos) : (tensor<1x16x8xf32>, tensor<1x1x8xf32>, tensor<i64>) -> tensor<1x16x8xf32>
  // expected-error @+1 {{result #0 is tied to argument #5, but @tied_out_of_range has 3 arguments}}
  return %new : tensor<1x16x8xf32>
}
