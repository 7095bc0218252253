"""Command-line options of the differential fuzzer (pytests/fuzz/test_fuzz.py)."""


def pytest_addoption(parser):
    group = parser.getgroup("fuzz", "differential fuzzer of random MIR programs (pytests/fuzz)")
    group.addoption("--fuzz-long", action="store_true",
                    help="run thousands of programs, each under every pipeline configuration")
    group.addoption("--fuzz-seed", type=int, default=None, help="first program seed (default: the CI profile's)")
    group.addoption("--fuzz-count", type=int, default=None, help="how many programs (seeds) to run")
    group.addoption("--fuzz-gpu", action="store_true",
                    help="also run each program's GPU kernels (rlx-lower-to-gpu) in pytests/gpu_interpreter.py")


def pytest_configure(config):
    """The on-disk compile cache (rlx_mlir/runtime/disk_cache.py) of this test session: a fresh
    directory, so tests neither read nor fill the user's cache (unless RLX_CACHE_DIR is set)."""
    import os
    import tempfile

    if "RLX_CACHE_DIR" not in os.environ:
        os.environ["RLX_CACHE_DIR"] = tempfile.mkdtemp(prefix="rlx-test-cache-")
