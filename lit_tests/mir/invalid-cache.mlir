// rlx.kv_cache_write, rlx.cached_attention and rlx.rope_at reject ill-formed
// operands and attributes with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @write_position_not_scalar(%c: tensor<1x8x4xf32>, %n: tensor<1x1x4xf32>, %p: tensor<1xi64>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{'rlx.kv_cache_write' op pos must be a rank-0 i64 tensor (one position), got shape [1]}}
  %0 = "rlx.kv_cache_write"(%c, %n, %p) : (tensor<1x8x4xf32>, tensor<1x1x4xf32>, tensor<1xi64>) -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @write_position_i32(%c: tensor<1x8x4xf32>, %n: tensor<1x1x4xf32>, %p: tensor<i32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{'rlx.kv_cache_write' op operand 'pos' must be a ranked tensor of i64, but got tensor<i32>}}
  %0 = "rlx.kv_cache_write"(%c, %n, %p) : (tensor<1x8x4xf32>, tensor<1x1x4xf32>, tensor<i32>) -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @write_width(%c: tensor<1x8x4xf32>, %n: tensor<1x1x6xf32>, %p: tensor<i64>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{'rlx.kv_cache_write' op new [1, 1, 6] does not match cache [1, 8, 4] in batch and width}}
  %0 = "rlx.kv_cache_write"(%c, %n, %p) : (tensor<1x8x4xf32>, tensor<1x1x6xf32>, tensor<i64>) -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @write_too_many_rows(%c: tensor<1x8x4xf32>, %n: tensor<1x9x4xf32>, %p: tensor<i64>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{'rlx.kv_cache_write' op new has S = 9 positions, more than the 8 of the cache}}
  %0 = "rlx.kv_cache_write"(%c, %n, %p) : (tensor<1x8x4xf32>, tensor<1x9x4xf32>, tensor<i64>) -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @write_element_types(%c: tensor<1x8x4xf32>, %n: tensor<1x1x4xf16>, %p: tensor<i64>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{'rlx.kv_cache_write' op requires operands of one element type, got f32, f16}}
  %0 = "rlx.kv_cache_write"(%c, %n, %p) : (tensor<1x8x4xf32>, tensor<1x1x4xf16>, tensor<i64>) -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @write_rank(%c: tensor<8x4xf32>, %n: tensor<1x1x4xf32>, %p: tensor<i64>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'rlx.kv_cache_write' op cache must have rank 3 ([B, C, W]), got [8, 4]}}
  %0 = "rlx.kv_cache_write"(%c, %n, %p) : (tensor<8x4xf32>, tensor<1x1x4xf32>, tensor<i64>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @attention_heads_attr(%q: tensor<1x1x8xf32>, %k: tensor<1x6x8xf32>, %v: tensor<1x6x8xf32>, %p: tensor<i64>) -> tensor<1x1x8xf32> {
  // expected-error @+1 {{'rlx.cached_attention' op num_heads must be positive, got 0}}
  %0 = "rlx.cached_attention"(%q, %k, %v, %p) {num_heads = 0 : i64, head_dim = 4 : i64} : (tensor<1x1x8xf32>, tensor<1x6x8xf32>, tensor<1x6x8xf32>, tensor<i64>) -> tensor<1x1x8xf32>
  return %0 : tensor<1x1x8xf32>
}

// -----

func.func @attention_query_width(%q: tensor<1x1x12xf32>, %k: tensor<1x6x8xf32>, %v: tensor<1x6x8xf32>, %p: tensor<i64>) -> tensor<1x1x12xf32> {
  // expected-error @+1 {{'rlx.cached_attention' op q last dim 12 is not num_heads * head_dim = 2 * 4}}
  %0 = "rlx.cached_attention"(%q, %k, %v, %p) {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x1x12xf32>, tensor<1x6x8xf32>, tensor<1x6x8xf32>, tensor<i64>) -> tensor<1x1x12xf32>
  return %0 : tensor<1x1x12xf32>
}

// -----

func.func @attention_kv_heads(%q: tensor<1x1x12xf32>, %k: tensor<1x6x8xf32>, %v: tensor<1x6x8xf32>, %p: tensor<i64>) -> tensor<1x1x12xf32> {
  // expected-error @+1 {{'rlx.cached_attention' op 3 query heads are not a multiple of 2 kv heads}}
  %0 = "rlx.cached_attention"(%q, %k, %v, %p) {num_heads = 3 : i64, head_dim = 4 : i64} : (tensor<1x1x12xf32>, tensor<1x6x8xf32>, tensor<1x6x8xf32>, tensor<i64>) -> tensor<1x1x12xf32>
  return %0 : tensor<1x1x12xf32>
}

// -----

func.func @attention_value_cache(%q: tensor<1x1x8xf32>, %k: tensor<1x6x8xf32>, %v: tensor<1x5x8xf32>, %p: tensor<i64>) -> tensor<1x1x8xf32> {
  // expected-error @+1 {{'rlx.cached_attention' op v_cache shape [1, 5, 8] differs from k_cache shape [1, 6, 8]}}
  %0 = "rlx.cached_attention"(%q, %k, %v, %p) {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x1x8xf32>, tensor<1x6x8xf32>, tensor<1x5x8xf32>, tensor<i64>) -> tensor<1x1x8xf32>
  return %0 : tensor<1x1x8xf32>
}

// -----

func.func @attention_more_queries_than_capacity(%q: tensor<1x7x8xf32>, %k: tensor<1x6x8xf32>, %v: tensor<1x6x8xf32>, %p: tensor<i64>) -> tensor<1x7x8xf32> {
  // expected-error @+1 {{'rlx.cached_attention' op q has S = 7 positions, more than the 6 of the cache}}
  %0 = "rlx.cached_attention"(%q, %k, %v, %p) {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x7x8xf32>, tensor<1x6x8xf32>, tensor<1x6x8xf32>, tensor<i64>) -> tensor<1x7x8xf32>
  return %0 : tensor<1x7x8xf32>
}

// -----

func.func @rope_n_rot_odd(%x: tensor<1x1x8xf32>, %c: tensor<6x2xf32>, %s: tensor<6x2xf32>, %p: tensor<i64>) -> tensor<1x1x8xf32> {
  // expected-error @+1 {{'rlx.rope_at' op n_rot 3 must be even (features rotate in pairs)}}
  %0 = "rlx.rope_at"(%x, %c, %s, %p) {head_dim = 4 : i64, n_rot = 3 : i64} : (tensor<1x1x8xf32>, tensor<6x2xf32>, tensor<6x2xf32>, tensor<i64>) -> tensor<1x1x8xf32>
  return %0 : tensor<1x1x8xf32>
}

// -----

func.func @rope_table_width(%x: tensor<1x1x8xf32>, %c: tensor<6x3xf32>, %s: tensor<6x3xf32>, %p: tensor<i64>) -> tensor<1x1x8xf32> {
  // expected-error @+1 {{'rlx.rope_at' op cos has shape [6, 3], expected [P, n_rot / 2] with n_rot 4}}
  %0 = "rlx.rope_at"(%x, %c, %s, %p) {head_dim = 4 : i64, n_rot = 4 : i64} : (tensor<1x1x8xf32>, tensor<6x3xf32>, tensor<6x3xf32>, tensor<i64>) -> tensor<1x1x8xf32>
  return %0 : tensor<1x1x8xf32>
}

// -----

func.func @rope_tables_differ(%x: tensor<1x1x8xf32>, %c: tensor<6x2xf32>, %s: tensor<5x2xf32>, %p: tensor<i64>) -> tensor<1x1x8xf32> {
  // expected-error @+1 {{'rlx.rope_at' op sin shape [5, 2] differs from cos shape [6, 2]}}
  %0 = "rlx.rope_at"(%x, %c, %s, %p) {head_dim = 4 : i64, n_rot = 4 : i64} : (tensor<1x1x8xf32>, tensor<6x2xf32>, tensor<5x2xf32>, tensor<i64>) -> tensor<1x1x8xf32>
  return %0 : tensor<1x1x8xf32>
}

// -----

func.func @rope_more_rows_than_table(%x: tensor<1x7x8xf32>, %c: tensor<6x2xf32>, %s: tensor<6x2xf32>, %p: tensor<i64>) -> tensor<1x7x8xf32> {
  // expected-error @+1 {{'rlx.rope_at' op x has S = 7 positions, more than the 6 of the cos / sin tables}}
  %0 = "rlx.rope_at"(%x, %c, %s, %p) {head_dim = 4 : i64, n_rot = 4 : i64} : (tensor<1x7x8xf32>, tensor<6x2xf32>, tensor<6x2xf32>, tensor<i64>) -> tensor<1x7x8xf32>
  return %0 : tensor<1x7x8xf32>
}
