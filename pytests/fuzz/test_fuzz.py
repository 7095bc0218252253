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
"""

import pytest

from .generator import generate
from .runner import Worker, check_program, configs_for

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
    failure = check_program(worker, program, configs_for(seed, request.config.getoption("--fuzz-long")))
    if failure is not None:
        pytest.fail(failure.report(), pytrace=False)
