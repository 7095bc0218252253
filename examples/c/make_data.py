"""Writes the MLP example's inputs and numpy's expected output as raw little-endian float32 files.

    python make_data.py OUTDIR          # x.bin w1.bin b1.bin w2.bin b2.bin expected.bin
                                        # + weights.safetensors (w1 b1 w2 b2, for rlx-compile --params)

The reference is written from the ops' documented semantics (dialect/rlx.md): matmul, add with
broadcasting, gelu with erf (exact), in float64.
"""

import json
import math
import sys
from pathlib import Path

import numpy as np

SHAPES = {"x": (8, 32), "w1": (32, 64), "b1": (64,), "w2": (64, 16), "b2": (16,)}


def gelu(v: np.ndarray) -> np.ndarray:
    return 0.5 * v * (1.0 + np.vectorize(math.erf)(v / math.sqrt(2.0)))


def write_safetensors(path: Path, tensors: dict) -> None:
    """A safetensors file: the 8-byte little-endian header size, the JSON header (padded with spaces to
    8 bytes), then each tensor's little-endian bytes at its data_offsets."""
    header, offset = {}, 0
    for name, value in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(value.shape), "data_offsets": [offset, offset + value.nbytes]}
        offset += value.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(v.astype("<f4").tobytes() for v in tensors.values()))


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
    write_safetensors(out / "weights.safetensors", {name: arrays[name] for name in ("w1", "b1", "w2", "b2")})


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
