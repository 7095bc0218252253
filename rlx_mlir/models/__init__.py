"""Reference models built with the GraphModule builder (Llama, its KV-cache step) and `generate()`.

Layer: above `frontend`; only `tools` may import it."""
