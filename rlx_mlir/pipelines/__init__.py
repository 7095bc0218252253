"""Named pipelines: sequences of RLX passes and upstream passes."""
