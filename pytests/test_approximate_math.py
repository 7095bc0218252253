"""Accuracy of rlx-approximate-math's inline exp / exp2 / log / tanh / erf, run by the JIT.

Each function is checked on dense grids of f32 inputs (about a million points)
and on special values, against float64 references computed by numpy (and
Python's `math.erf`), in two forms:

- "generic": `math.<fn>` on f32 scalars in a linalg.generic body, as the MIR
  lowerings emit it; `rlx-approximate-math` runs, then `rlx_mlir.compile`.
- "vector": `math.<fn>` on `vector<16xf32>` in a loop over a memref, lowered
  with upstream passes and run by MLIR's ExecutionEngine directly.

The end-to-end tests run RLX activations (gelu, gelu_approx, sigmoid, silu,
softmax, ...) through rlx-mir-to-linalg + rlx-approximate-math + compile and
check that the compiled code contains no libm call or exp/log/tanh intrinsic.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
from mlir import ir
from mlir.execution_engine import ExecutionEngine
from mlir.runtime import get_ranked_memref_descriptor

import rlx_mlir
from rlx_mlir.passmanager.pipeline import run_pipeline

F32 = np.float32
TINIEST = F32(np.finfo(F32).smallest_subnormal)  # 2^-149
FLT_MIN = F32(np.finfo(F32).tiny)  # 2^-126, the smallest normal
FLT_MAX = F32(np.finfo(F32).max)
INF, NAN = F32(np.inf), F32(np.nan)
LANES = 16
SCALAR_CALLS = ("@tanhf", "@erff", "@expf", "@exp2f", "@logf", "llvm.intr.tanh", "llvm.intr.exp", "llvm.intr.log")

GENERIC = """#id = affine_map<(d0) -> (d0)>
func.func @f(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %init = tensor.empty() : tensor<{n}xf32>
  %0 = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel"]}}
      ins(%x : tensor<{n}xf32>) outs(%init : tensor<{n}xf32>) {{
  ^bb0(%in: f32, %out: f32):
    %y = math.{fn} %in {attributes}: f32
    linalg.yield %y : f32
  }} -> tensor<{n}xf32>
  return %0 : tensor<{n}xf32>
}}
"""

VECTOR = """func.func @f(%x: memref<?xf32>, %out: memref<?xf32>) attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %step = arith.constant {lanes} : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %step {{
    %v = vector.load %x[%i] : memref<?xf32>, vector<{lanes}xf32>
    %y = math.{fn} %v {attributes}: vector<{lanes}xf32>
    vector.store %y, %out[%i] : memref<?xf32>, vector<{lanes}xf32>
  }}
  return
}}
"""
VECTOR_TO_LLVM = (
    "builtin.module(rlx-approximate-math,convert-scf-to-cf,convert-vector-to-llvm,convert-math-to-llvm,"
    "finalize-memref-to-llvm,convert-arith-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,"
    "reconcile-unrealized-casts)"
)


def _approximated(text: str, pipeline: str = "rlx-mir-to-linalg,rlx-approximate-math") -> str:
    with rlx_mlir.make_context():
        module = ir.Module.parse(text)
        run_pipeline(module.operation, f"builtin.module({pipeline})")
        return str(module)


def _run_generic(fn: str, x: np.ndarray, attributes: str = "") -> np.ndarray:
    executable = rlx_mlir.compile(_approximated(GENERIC.format(fn=fn, n=x.size, attributes=attributes)), entry="f")
    _assert_inline(executable.llvm_ir)
    return executable(x)


def _assert_inline(llvm_dialect: str) -> None:
    """No libm call, and no LLVM intrinsic that LLVM would expand into one per element."""
    assert not [call for call in SCALAR_CALLS if call in llvm_dialect]


def _run_vector(fn: str, x: np.ndarray, attributes: str = "") -> np.ndarray:
    padded = np.zeros(-(-x.size // LANES) * LANES, F32)
    padded[: x.size] = x
    out = np.empty_like(padded)
    with rlx_mlir.make_context():
        module = ir.Module.parse(VECTOR.format(fn=fn, lanes=LANES, attributes=attributes))
        run_pipeline(module.operation, VECTOR_TO_LLVM)
        _assert_inline(str(module))
        engine = ExecutionEngine(module, opt_level=2)
        pointers = [
            ctypes.pointer(ctypes.pointer(get_ranked_memref_descriptor(array))) for array in (padded, out)
        ]
        engine.invoke("f", *pointers)
    return out[: x.size]


RUNNERS = {"generic": _run_generic, "vector": _run_vector}


@pytest.fixture(params=sorted(RUNNERS))
def run(request):
    """run(fn, x, attributes=""): math.<fn> (with `attributes`, an attribute dictionary) applied
    to the f32 array x in the parametrized form."""
    return RUNNERS[request.param]


def _grid(low: float, high: float, n: int = 1 << 20) -> np.ndarray:
    return np.linspace(low, high, n).astype(F32)


def _same(actual: np.ndarray, expected) -> bool:
    """Equal as f32, NaN equal to NaN, and +0 distinct from -0."""
    expected = np.asarray(expected, F32)
    return bool(np.all((actual.view(np.int32) == expected.view(np.int32)) | (np.isnan(actual) & np.isnan(expected))))


def _relative_error(actual: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(actual.astype(np.float64) - reference) / np.abs(reference)))


def _absolute_error(actual: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(actual.astype(np.float64) - reference)))


_erf = np.vectorize(math.erf, otypes=[np.float64])


# --- exp ------------------------------------------------------------------------------


def test_exp_normal_results_within_one_ulp(run):
    # Where e^x is a normal float: ln(FLT_MIN) = -87.34 .. ln(FLT_MAX) = 88.72.
    x = np.concatenate([_grid(-87.33, 88.72), _grid(-1.0, 1.0, 1 << 16)])
    y = run("exp", x)
    assert _relative_error(y, np.exp(x.astype(np.float64))) <= 1.2e-7


def test_exp_underflows_gradually_through_subnormals(run):
    x = _grid(-104.0, -87.34, 1 << 18)
    y = run("exp", x)
    assert _absolute_error(y, np.exp(x.astype(np.float64))) <= float(TINIEST)
    assert y[-1] > 0 and y[0] == 0


def test_exp_special_values(run):
    x = np.array([0.0, -0.0, TINIEST, -TINIEST, INF, -INF, NAN, 88.72283, 88.7229, 89.0, FLT_MAX, -103.98, -1e30], F32)
    y = run("exp", x)
    finite_max = F32(np.exp(np.float64(F32(88.72283))))
    assert _same(y, [1.0, 1.0, 1.0, 1.0, INF, 0.0, NAN, finite_max, INF, INF, INF, 0.0, 0.0])


NONPOSITIVE = "{rlx.nonpositive} "  # math.exp of x <= 0 or NaN (the tiled attention's softmax)


def test_exp_of_nonpositive_within_one_ulp_and_underflows_gradually(run):
    normal = _grid(-87.33, 0.0)
    y = run("exp", normal, NONPOSITIVE)
    assert _relative_error(y, np.exp(normal.astype(np.float64))) <= 1.2e-7
    subnormal = _grid(-104.0, -87.34, 1 << 18)
    y = run("exp", subnormal, NONPOSITIVE)
    assert _absolute_error(y, np.exp(subnormal.astype(np.float64))) <= float(TINIEST)
    assert y[-1] > 0 and y[0] == 0


def test_exp_of_nonpositive_is_the_exp_bit_for_bit(run):
    # Where its contract holds, the shorter expansion rounds exactly as the general one.
    x = np.concatenate([_grid(-110.0, 0.0), -np.geomspace(1e-30, 1.0, 1 << 12).astype(F32)])
    assert _same(run("exp", x, NONPOSITIVE), run("exp", x))


def test_exp_of_nonpositive_special_values(run):
    payload_nans = np.array([0x7FC00123, 0xFFC001FF, 0x7F8001FF], np.uint32).view(F32)  # NaNs with low bits set
    x = np.concatenate([np.array([0.0, -0.0, -TINIEST, -INF, NAN, -NAN, -103.98, -1e30, -FLT_MAX], F32), payload_nans])
    assert _same(run("exp", x, NONPOSITIVE), [1.0, 1.0, 1.0, 0.0, NAN, NAN, 0.0, 0.0, 0.0, NAN, NAN, NAN])


# --- exp2 -----------------------------------------------------------------------------


def test_exp2_normal_results_below_one_ulp(run):
    # Where 2^x is a normal float: -126 .. 128.
    x = np.concatenate([_grid(-126.0, 127.99), _grid(-1.0, 1.0, 1 << 16)])
    y = run("exp2", x)
    assert _relative_error(y, np.exp2(x.astype(np.float64))) <= 8e-8


def test_exp2_underflows_gradually_through_subnormals(run):
    x = _grid(-151.0, -126.0, 1 << 18)
    y = run("exp2", x)
    assert _absolute_error(y, np.exp2(x.astype(np.float64))) <= float(TINIEST)
    assert y[-1] > 0 and y[0] == 0


def test_exp2_special_values(run):
    x = np.array([0.0, -0.0, 1.0, 3.0, -149.0, -150.49, 127.99, 128.0, INF, -INF, NAN, FLT_MAX, -FLT_MAX], F32)
    y = run("exp2", x)
    near_max = F32(np.exp2(np.float64(F32(127.99))))
    assert _same(y, [1.0, 1.0, 2.0, 8.0, TINIEST, 0.0, near_max, INF, INF, 0.0, NAN, INF, 0.0])


def test_exp2_of_nonpositive_within_one_ulp_and_underflows_gradually(run):
    normal = _grid(-126.0, 0.0)
    y = run("exp2", normal, NONPOSITIVE)
    assert _relative_error(y, np.exp2(normal.astype(np.float64))) <= 8e-8
    subnormal = _grid(-151.0, -126.0, 1 << 18)
    y = run("exp2", subnormal, NONPOSITIVE)
    assert _absolute_error(y, np.exp2(subnormal.astype(np.float64))) <= float(TINIEST)
    assert y[-1] > 0 and y[0] == 0


def test_exp2_of_nonpositive_is_the_exp2_bit_for_bit(run):
    # Half-integers too: both round x + magic the same way, so n and r agree at the ties.
    x = np.concatenate([_grid(-160.0, 0.0), -np.geomspace(1e-30, 1.0, 1 << 12).astype(F32),
                        np.arange(-152.0, 0.5, 0.5, dtype=F32)])
    assert _same(run("exp2", x, NONPOSITIVE), run("exp2", x))


def test_exp2_of_nonpositive_special_values(run):
    payload_nans = np.array([0x7FC00123, 0xFFC001FF, 0x7F8001FF], np.uint32).view(F32)  # NaNs with low bits set
    x = np.concatenate([np.array([0.0, -0.0, -TINIEST, -1.0, -149.0, -INF, NAN, -NAN, -150.49, -1e30, -FLT_MAX], F32),
                        payload_nans])
    assert _same(run("exp2", x, NONPOSITIVE), [1.0, 1.0, 1.0, 0.5, TINIEST, 0.0, NAN, NAN, 0.0, 0.0, 0.0, NAN, NAN, NAN])


# --- log ------------------------------------------------------------------------------


def test_log_within_one_ulp_on_normals_and_subnormals(run):
    normals = np.exp(np.linspace(-87.3, 88.72, 1 << 19)).astype(F32)
    near_one = _grid(0.5, 2.0, 1 << 19)
    subnormals = np.arange(1, 1 << 23, 61, dtype=np.int32).view(F32)
    x = np.concatenate([normals, near_one, subnormals, [FLT_MIN, FLT_MAX]]).astype(F32)
    x = x[x != 1]  # log(1) = 0: relative error undefined, checked exactly below
    y = run("log", x)
    assert _relative_error(y, np.log(x.astype(np.float64))) <= 1.2e-7


def test_log_special_values(run):
    x = np.array([1.0, 0.0, -0.0, INF, -INF, -1.0, -TINIEST, NAN, TINIEST], F32)
    y = run("log", x)
    assert _same(y[:8], [0.0, -INF, -INF, INF, NAN, NAN, NAN, NAN])
    assert abs(float(y[8]) - math.log(float(TINIEST))) <= 1e-5


# --- tanh -----------------------------------------------------------------------------


def test_tanh_absolute_error(run):
    x = np.concatenate([_grid(-12.0, 12.0), _grid(-0.01, 0.01, 1 << 16)])
    y = run("tanh", x)
    assert _absolute_error(y, np.tanh(x.astype(np.float64))) <= 5e-7
    assert np.max(np.abs(y)) <= 1.0
    # Relative accuracy near 0, where tanh(x) ~ x.
    small = x[(x != 0) & (np.abs(x) < 0.01)]
    assert _relative_error(run("tanh", small), np.tanh(small.astype(np.float64))) <= 5e-7


def test_tanh_special_values_and_saturation(run):
    x = np.array([0.0, -0.0, TINIEST, 1e-30, INF, -INF, 7.906, -9.0, 100.0, -FLT_MAX, NAN], F32)
    y = run("tanh", x)
    assert _same(y, [0.0, -0.0, TINIEST, 1e-30, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, NAN])


# --- erf ------------------------------------------------------------------------------


def test_erf_absolute_error(run):
    x = _grid(-6.0, 6.0)
    y = run("erf", x)
    assert _absolute_error(y, _erf(x.astype(np.float64))) <= 5e-7
    assert np.max(np.abs(y)) <= 1.0


def test_erf_special_values(run):
    x = np.array([0.0, -0.0, INF, -INF, 10.0, -FLT_MAX, NAN], F32)
    y = run("erf", x)
    assert _same(y, [0.0, -0.0, 1.0, -1.0, 1.0, -1.0, NAN])


# --- RLX activations end to end --------------------------------------------------------

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


ACTIVATIONS = {
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "gelu_approx": lambda x: 0.5 * x * (1.0 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x**3))),
    "sigmoid": _sigmoid,
    "silu": lambda x: x * _sigmoid(x),
    "tanh": np.tanh,
    "exp": np.exp,
    "softmax": _softmax,
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_rlx_activation_has_no_scalar_calls_and_matches_numpy(name):
    shape = (64, 1024)
    attrs = " {axis = 1 : i64}" if name == "softmax" else ""
    text = (
        f"func.func @f(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {{\n"
        f'  %0 = "rlx.{name}"(%x){attrs} : (tensor<64x1024xf32>) -> tensor<64x1024xf32>\n'
        f"  return %0 : tensor<64x1024xf32>\n}}\n"
    )
    executable = rlx_mlir.compile(_approximated(text), entry="f")
    _assert_inline(executable.llvm_ir)
    x = np.random.default_rng(7).uniform(-8.0, 8.0, shape).astype(F32)
    expected = ACTIVATIONS[name](x.astype(np.float64))
    np.testing.assert_allclose(executable(x), expected, rtol=2e-6, atol=1e-6)


def test_log_of_rlx_softmax_matches_numpy():
    text = (
        "func.func @f(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {\n"
        '  %0 = "rlx.softmax"(%x) {axis = 1 : i64} : (tensor<8x256xf32>) -> tensor<8x256xf32>\n'
        '  %1 = "rlx.log"(%0) : (tensor<8x256xf32>) -> tensor<8x256xf32>\n'
        "  return %1 : tensor<8x256xf32>\n}\n"
    )
    executable = rlx_mlir.compile(_approximated(text), entry="f")
    x = np.random.default_rng(3).uniform(-20.0, 20.0, (8, 256)).astype(F32)
    expected = np.log(_softmax(x.astype(np.float64)))
    np.testing.assert_allclose(executable(x), expected, rtol=1e-5, atol=1e-5)
