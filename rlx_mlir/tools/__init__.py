"""Command-line tools: rlx-opt, rlx-run, rlx-gen-dialect."""
