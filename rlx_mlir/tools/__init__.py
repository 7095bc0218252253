"""Command-line tools: rlx-opt, rlx-run, rlx-gen-dialect.

Layer: the top; nothing in the package imports a tool."""
