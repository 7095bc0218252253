"""Reference models built with the GraphModule builder."""
