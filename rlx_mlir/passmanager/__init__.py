"""Passes and pipelines as objects: the pass base classes and their options, the textual
pipeline parser that mixes RLX and upstream passes, the lazy name registry and the `rlx-verify` pass.

Layer: above `dialects`; the conversions, transforms and pipelines build on it.  The registry names
the passes above it by `module:Class` string and imports one when it is first looked up."""
