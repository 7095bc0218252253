"""Command-line options of the differential fuzzer (pytests/fuzz/test_fuzz.py)."""


def pytest_addoption(parser):
    group = parser.getgroup("fuzz", "differential fuzzer of random MIR programs (pytests/fuzz)")
    group.addoption("--fuzz-long", action="store_true",
                    help="run thousands of programs, each under every pipeline configuration")
    group.addoption("--fuzz-seed", type=int, default=None, help="first program seed (default: the CI profile's)")
    group.addoption("--fuzz-count", type=int, default=None, help="how many programs (seeds) to run")
