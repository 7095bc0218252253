"""Differential fuzzing: random valid MIR programs, compiled and run, against a float64 reference.

Each program (generator.py: every op family, views in every position, casts through f16 / bf16,
odd matmul shapes, several results) is compiled by `rlx_mlir.compile` under pipeline
configurations (runner.CONFIGS: the default, `plan=False`, `matmul_kernels=False`, `threads=1`,
fusion off) in a worker process, so an abort cannot take pytest down, and its results are compared
with reference.py, a numpy interpreter written from dialect/rlx.md that bounds the rounding error
of every value. A failure (wrong numbers, a rejected valid program, an internal error, a crash)
is shrunk to a minimal program, printed with its configuration and error.

    pytest -q pytests/fuzz                                  # CI profile: 300 programs, 2 configs each
    pytest pytests/fuzz --fuzz-long                         # 3000 programs, every configuration
    pytest pytests/fuzz --fuzz-seed 1234 --fuzz-count 1     # one program (what a failure prints)
    pytest pytests/fuzz --fuzz-gpu --fuzz-count 50          # also the GPU kernels, in the GPU interpreter
"""

import pytest

from .generator import generate
from .runner import GPU, Worker, check_program, configs_for, runs_on

CI_SEED, CI_COUNT = 0, 300
LONG_COUNT = 3000


def _seeds(config):
    long = config.getoption("--fuzz-long")
    start = config.getoption("--fuzz-seed")
    count = config.getoption("--fuzz-count")
    start = CI_SEED if start is None else start
    count = count if count is not None else LONG_COUNT if long else CI_COUNT
    return range(start, start + count)


def pytest_generate_tests(metafunc):
    if "seed" in metafunc.fixturenames:
        metafunc.parametrize("seed", _seeds(metafunc.config), ids=lambda seed: f"seed{seed}")


@pytest.fixture(scope="module")
def worker():
    process = Worker()
    yield process
    process.close()


def test_program(seed, worker, request):
    program = generate(seed)
    configs = configs_for(seed, request.config.getoption("--fuzz-long"), request.config.getoption("--fuzz-gpu"))
    failure = check_program(worker, program, configs)
    if failure is not None:
        pytest.fail(failure.report(), pytrace=False)


GPU_CI_SEEDS = range(CI_SEED, CI_SEED + 16)


@pytest.mark.parametrize("gpu_seed", GPU_CI_SEEDS, ids=lambda seed: f"seed{seed}")
def test_gpu_kernels_of_a_program(gpu_seed, worker):
    """Every profile: a few programs' GPU kernels in the GPU interpreter (all of them with --fuzz-gpu)."""
    program = generate(gpu_seed)
    if not runs_on(program, GPU):
        pytest.skip("bf16 or values too large for the GPU interpreter")
    failure = check_program(worker, program, [GPU])
    if failure is not None:
        pytest.fail(failure.report(), pytrace=False)


# The fuzzer's own parts: a checker that cannot fail, or a crash that takes pytest down, would hide bugs.

def test_generation_is_deterministic():
    assert generate(123).text() == generate(123).text()
    assert generate(123).text() != generate(124).text()


def test_checker_flags_a_wrong_result_and_accepts_the_right_one():
    """Issue 13's first example: neg(x) viewed by an identity expand, plus -s."""
    import numpy as np

    from . import reference
    from .generator import Arg, Op, Program
    from .runner import compare

    x, s = np.array([1, 2, 3, 4], np.float32), np.array(10, np.float32)
    program = Program(0, [Arg("x", (4,), "f32"), Arg("s", (), "f32")], {"x": x, "s": s}, [
        Op("v0", "neg", ("x",), {}, (4,), "f32"),
        Op("v1", "expand", ("v0",), {"shape": (4,)}, (4,), "f32"),
        Op("v2", "neg", ("s",), {}, (), "f32"),
        Op("v3", "add", ("v1", "v2"), {}, (4,), "f32"),
    ], ["v3"])
    values = reference.evaluate(program)
    assert compare(program, values, [np.array([-11, -12, -13, -14], np.float32)], "default").kind == "ok"
    wrong = compare(program, values, [np.array([-20, -12, -13, -14], np.float32)], "default")
    assert (wrong.kind, wrong.max_error) == ("mismatch", 9.0)


def test_bf16_rounding_is_round_to_nearest_even():
    import numpy as np

    from .reference import round_to

    # 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one (1).
    values = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -1.00001, 3.0])
    assert round_to(values, "bf16").tolist() == [1.0, 1 + 2 ** -6, -1.0, 3.0]


def test_a_crashing_compile_is_an_outcome_not_a_dead_pytest():
    import sys

    process = Worker(command=[sys.executable, "-c", "import os; os.abort()"])
    kind, message = process.run("func.func @f() { return }", {}, [])
    assert kind == "crash" and "signal 6" in message


def test_matmul_bound_of_an_unbounded_factor_is_never_nan():
    """Seed 6700060: an integer cast that rounding could change has an infinite bound; times an exact
    operand, plain matmul of the bounds gave inf * 0 = NaN, and every configuration 'failed'."""
    import numpy as np

    from .reference import RefValue, matmul

    a = RefValue(np.array([[2.0, 0.0]]), np.array([[np.inf, 0.0]]), "f32")
    b = RefValue(np.array([[1.5], [0.0]]), np.zeros((2, 1)), "f32")
    assert np.isinf(matmul(a, b).err).all()  # the uncertain 2.0 meets a nonzero weight
    c = RefValue(np.array([[0.0], [1.5]]), np.zeros((2, 1)), "f32")
    bound = matmul(a, c).err  # ... or only an exact zero: no uncertainty added
    assert np.isfinite(bound).all() and not np.isnan(bound).any()


def test_product_bound_of_an_unbounded_factor_is_never_nan():
    """Seed 8700058: cast(cast(relu(x), i32), f32) * x, where the integer cast of 1.0 - rounding may be
    0 or 1 (an infinite bound) and x is exact: the elementwise product's bound was inf * 0 = NaN, so the
    compiled 1.0 'failed' against the expected 1.0 under every configuration."""
    import numpy as np

    from .reference import RefValue, binary

    uncertain = RefValue(np.array([1.0, 1.0]), np.array([np.inf, np.inf]), "f32")
    exact = RefValue(np.array([1.0, 0.0]), np.zeros(2), "f32")
    bound = binary("mul", uncertain, exact).err
    assert not np.isnan(bound).any()
    assert np.isinf(bound[0]) and bound[1] == 0.0  # times 1.0 it stays unknown; times an exact 0 it is 0
