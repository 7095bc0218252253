"""Loading checkpoints people have into the Llama builder: GGUF files and Hugging Face directories.

    from rlx_mlir.models.checkpoints import load_gguf, load_hf
    config, weights = load_gguf("model.gguf")             # or load_hf("dir/", quantize="q8_0")
    model = CachedLlama(config, weights, capacity=256)    # rlx_mlir.models.generate

Both return a `LlamaConfig` and the weights `build_llama` / `CachedLlama` take (float32, the
builder's names and `[in, out]` layout; with `keep_quantized=True` the quantised projections
stay packed GGUF bytes, `uint8 [out, row_bytes]`, named by the config's `quant`); bad files raise `CheckpointError` (a ValueError and an
RlxError) naming the file and what is wrong.  `gguf_file` reads GGUF (the `gguf` package), `hf`
reads config.json + safetensors (the `safetensors` package), `weights` holds what both map to.
Both packages are optional: imported when a file is loaded.
"""

from .gguf_file import GgufCheckpoint, load_gguf, read_gguf, unpermute_rope_rows
from .hf import load_hf
from .weights import CheckpointError, QuantizedWeight

__all__ = ["CheckpointError", "GgufCheckpoint", "QuantizedWeight", "load_gguf", "load_hf", "read_gguf",
           "unpermute_rope_rows"]
