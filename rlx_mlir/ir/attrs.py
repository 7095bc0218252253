"""Every attribute name rlx-mlir defines: the one set of constants.

A pass that writes an attribute and the pass (or runtime) that reads it import the name from
here, so no layer imports another only for a string.  Import-free: any layer may use it.
Attributes of the upstream dialects (`bufferization.writable`, `llvm.emit_c_interface`) keep
their names where they are used.
"""

# --- function arguments and results (MIR and HIR) ------------------------------------------
NAME_ATTR = "rlx.name"  # argument: its name in the numpy signature (a string)
PARAM_ATTR = "rlx.param"  # argument: a weight rather than a runtime input (unit)
TIED_ATTR = "rlx.tied"  # result: this result is argument #N updated in place (a KV cache)

# --- symbolic dimensions (rlx_mlir.dims) -----------------------------------------------------
DIMS_ATTR = "rlx.dims"  # argument: its symbolic shape, e.g. ["BATCH", "SEQ", 512]
SYM_ATTR = "rlx.sym"  # op: the symbolic expressions of its size attributes

# --- HIR -------------------------------------------------------------------------------------
FUSION_POLICY_ATTR = "rlx_hir.fusion_policy"  # module: how rlx-hir-to-mir expands blocks
OUTLINED_ATTR = "rlx.outlined"  # function: an HIR block outlined by rlx-outline-blocks (unit)

# --- LIR: per-op plan data (the plan itself is the rlx_lir.plan op) --------------------------
SLOT_ATTR = "rlx_lir.slot"  # op: array<i64: offset, size> of its result in the arena
VIEW_ATTR = "rlx_lir.view"  # op: its result is a view of its operand's slot (unit)
PHASE_ATTR = "rlx_lir.phase"  # op: "prologue", "steady" or "epilogue"
FUSED_ATTR = "rlx_lir.fused"  # op: an elementwise result computed inside its only consumer: no buffer
# function: array<i64: bytes, alignment> of the arena its caller passes as its last argument (before
# the out-params): every planned intermediate of it and of the functions it calls (rlx-lir-to-linalg)
ARENA_ATTR = "rlx.arena"

# --- linalg CPU codegen ----------------------------------------------------------------------
KERNEL_ATTR = "rlx.microkernel"  # linalg.generic: a packed GEMM for rlx-tile-matmul (then its index)
PACKED_ATTR = "rlx.microkernel_packed"  # linalg.generic: whether its B operand was packed (bool)
# linalg.fill: the zero fill a GEMM kernel's C starts from, dropped by rlx-tile-matmul (its first K block stores)
ZERO_C_ATTR = "rlx.microkernel_zero_c"
PANELS_ATTR = "rlx.b_panels"  # linalg.pack: B of a GEMM kernel packed into column panels (unit, rlx-pack-matmul)
# function: the B panels of its parameters it takes, packed once by companion functions
# (rlx-hoist-param-packing): [{param = "w", function = "f__pack0", type = tensor<...>}, ...], one per
# argument after the source's arguments
PACKED_PARAMS_ATTR = "rlx.packed_params"
# function: LLVM argument positions (aligned pointers of memref arguments) that get llvm.noalias
NOALIAS_POINTERS_ATTR = "rlx.noalias_pointers"
GEMV_ATTR = "rlx.gemv"  # linalg.matmul: transient tag (its index) while rlx-tile-gemv tiles it
# loop: rows of B per pass of rlx-tile-gemv's kernel (i64) for the matmuls inside it, where the op
# that built them knows B is in cache (rlx.grouped_matmul's loop over an expert's tiles): C's tile
# is loaded and stored once per that many rows
GEMV_ROWS_ATTR = "rlx.gemv_rows"
VECTORIZE_ATTR = "rlx.vectorize"  # linalg.generic: transient tag while rlx-vectorize-elementwise vectorizes it
TRANSPOSE_BLOCKS_ATTR = "rlx.transpose_blocks"  # linalg.transpose: transient tag (its rank) while rlx-vectorize-transposes blocks it
PARALLEL_ID = "rlx.parallel_id"  # linalg op: transient tag while rlx-parallelize-linalg tiles it
# math.exp / math.exp2: its operand is <= 0 or NaN (a softmax's `x - max`): rlx-approximate-math expands it
# without the overflow path (unit)
NONPOSITIVE_ATTR = "rlx.nonpositive"
