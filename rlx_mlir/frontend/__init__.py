"""The Python front end: `GraphModule` (RLX's builder over the HIR and MIR dialects) and `inspect()`.

Layer: near the top; builds IR with `dialects`, compiles through `driver` and `runtime`.  Only
`models` and `tools` import it."""
