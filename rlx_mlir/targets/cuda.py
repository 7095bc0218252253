"""NVIDIA targets: which PTX ISA versions each `sm_XX` chip accepts.

LLVM's NVPTX backend aborts the whole process (`LLVM ERROR: PTX version 6.0
does not support target 'sm_90'`) when a chip is paired with a PTX version
that is too old, and silently ignores an unknown `+ptxNN` feature (falling back
to PTX 6.0, and aborting again).  `check_target` validates the pair in Python
before any IR reaches LLVM.

`MIN_PTX` holds, for every chip LLVM 22 knows, the oldest PTX ISA version
(times ten) it accepts; measured by running `llc -mcpu=<chip> -mattr=+ptx<N>`
of the pinned LLVM tools over every pair.  `PTX_VERSIONS` are the `+ptxNN`
features LLVM 22 recognises.  Plain Python: importable without MLIR.
"""

from __future__ import annotations

import re

from ..errors import RlxError

PTX_VERSIONS = (32, 40, 41, 42, 43, 50, 60, 61, 62, 63, 64, 65, 70, 71, 72, 73, 74, 75, 76, 77, 78,
                80, 81, 82, 83, 84, 85, 86, 87, 88, 90)

MIN_PTX = {
    "sm_20": 32, "sm_21": 32, "sm_30": 32, "sm_32": 40, "sm_35": 32, "sm_37": 41,
    "sm_50": 40, "sm_52": 41, "sm_53": 42, "sm_60": 50, "sm_61": 50, "sm_62": 50,
    "sm_70": 60, "sm_72": 61, "sm_75": 63, "sm_80": 70, "sm_86": 71, "sm_87": 74, "sm_88": 90,
    "sm_89": 78, "sm_90": 78, "sm_90a": 80,
    "sm_100": 86, "sm_100a": 86, "sm_100f": 88, "sm_101": 86, "sm_101a": 86, "sm_101f": 88,
    "sm_103": 88, "sm_103a": 88, "sm_103f": 88, "sm_110": 90, "sm_110a": 90, "sm_110f": 90,
    "sm_120": 87, "sm_120a": 87, "sm_120f": 88, "sm_121": 88, "sm_121a": 88, "sm_121f": 88,
}

FORMATS = ("isa", "bin", "fatbin")  # PTX text; cubin and fatbin need `ptxas` / `fatbinary`

_PTX_FEATURE = re.compile(r"^\+ptx(\d+)$")


class TargetError(RlxError, ValueError):
    """A chip, PTX version or binary format that LLVM would reject (or abort on)."""


def ptx_version(features: str) -> int:
    """The PTX version (times ten) named by a `+ptxNN` in a comma-separated feature list."""
    versions = []
    for feature in filter(None, (f.strip() for f in features.split(","))):
        match = _PTX_FEATURE.match(feature)
        if match:
            versions.append(int(match.group(1)))
    if len(versions) != 1:
        raise TargetError(f"features '{features}' must name exactly one PTX version, such as '+ptx80'")
    return versions[0]


def _dotted(version: int) -> str:
    return f"{version // 10}.{version % 10}"


def check_target(chip: str, features: str, format: str = "isa") -> None:
    """Raises TargetError unless LLVM 22 can compile for `chip` with `features`."""
    if chip not in MIN_PTX:
        known = ", ".join(sorted(MIN_PTX, key=lambda c: (int(re.sub(r"\D", "", c)), c)))
        raise TargetError(f"unknown NVIDIA chip '{chip}' (known: {known})")
    version = ptx_version(features)
    if version not in PTX_VERSIONS:
        raise TargetError(
            f"PTX version {_dotted(version)} ('+ptx{version}') is not supported by LLVM 22 "
            f"(supported: {', '.join(_dotted(v) for v in PTX_VERSIONS)})"
        )
    if version < MIN_PTX[chip]:
        raise TargetError(
            f"PTX version {_dotted(version)} does not support '{chip}': it needs '+ptx{MIN_PTX[chip]}' "
            f"(PTX {_dotted(MIN_PTX[chip])}) or newer"
        )
    if format not in FORMATS:
        raise TargetError(f"unknown binary format '{format}' (formats: {', '.join(FORMATS)})")


def has_tensor_cores(chip: str) -> bool:
    """Whether `chip` (a known `sm_XX`) has the f16 tensor cores WMMA uses: Volta (sm_70) and later."""
    return int(re.sub(r"\D", "", chip)) >= 70
