"""Writes the 2-layer Llama example: llama.mlir (rlx_mlir.models.llama), its inputs as raw files
(tokens.bin and one .bin per weight, named as the inputs), and result0.expected.bin, the logits the
Python JIT (rlx_mlir.compile) computes from them, for run_model.c to compare with.

    python make_llama.py OUTDIR
"""

import sys
from pathlib import Path

import numpy as np

import rlx_mlir
from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights

# The 2-layer model of the tests (pytests/test_llama.py).
CONFIG = LlamaConfig(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=97, seq=7,
                     rope_theta=10000.0, eps=1e-5)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    text = str(build_llama(CONFIG))
    (out / "llama.mlir").write_text(text)
    weights = random_weights(CONFIG, seed=0)
    tokens = np.random.default_rng(1).integers(0, CONFIG.vocab, (CONFIG.batch, CONFIG.seq)).astype(np.int64)
    for name, value in {"tokens": tokens, **weights}.items():
        np.ascontiguousarray(value).tofile(out / f"{name}.bin")
    logits = rlx_mlir.compile(text)(tokens=tokens, **weights)
    logits.astype(np.float32).tofile(out / "result0.expected.bin")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
