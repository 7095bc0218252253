"""Writes the MLP example's inputs and numpy's expected output as raw little-endian float32 files.

    python make_data.py OUTDIR          # x.bin w1.bin b1.bin w2.bin b2.bin expected.bin

The reference is written from the ops' documented semantics (dialect/rlx.md): matmul, add with
broadcasting, gelu with erf (exact), in float64.
"""

import math
import sys
from pathlib import Path

import numpy as np

SHAPES = {"x": (8, 32), "w1": (32, 64), "b1": (64,), "w2": (64, 16), "b2": (16,)}


def gelu(v: np.ndarray) -> np.ndarray:
    return 0.5 * v * (1.0 + np.vectorize(math.erf)(v / math.sqrt(2.0)))


def main(out: Path) -> None:
    rng = np.random.default_rng(1800)
    arrays = {name: (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)
              for name, shape in SHAPES.items()}
    a = {name: value.astype(np.float64) for name, value in arrays.items()}
    expected = gelu(a["x"] @ a["w1"] + a["b1"]) @ a["w2"] + a["b2"]
    out.mkdir(parents=True, exist_ok=True)
    for name, value in arrays.items():
        value.astype("<f4").tofile(out / f"{name}.bin")
    expected.astype("<f4").tofile(out / "expected.bin")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
