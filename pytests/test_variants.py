"""ModelVariant: RLX's shape buckets, their symbol bindings and cache keys stable across processes."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from rlx_mlir import GraphModule
from rlx_mlir.dialects import rlx
from rlx_mlir.dims.variants import ModelPhase, ModelVariant


def test_prefill_binds_batch_and_seq():
    assert ModelVariant.prefill(1, 128).dim_binding() == {"BATCH": 1, "SEQ": 128}
    assert ModelVariant.prefill(1, 128).phase is ModelPhase.PREFILL


def test_rows_is_bound_only_for_batches_above_one():
    # RLX's DimBinding::batch_seq sets ROWS = BATCH * SEQ only when BATCH > 1.
    assert ModelVariant.prefill(4, 16).dim_binding() == {"BATCH": 4, "SEQ": 16, "ROWS": 64}
    assert ModelVariant.encoder(2, 5).dim_binding() == {"BATCH": 2, "SEQ": 5, "ROWS": 10}


def test_decode_binds_past_and_the_new_tokens():
    variant = ModelVariant.decode(1, 64, 1)
    assert variant.dim_binding() == {"BATCH": 1, "PAST_SEQ": 64, "SEQ": 1}
    assert (variant.seq, variant.past_seq, variant.phase) == (1, 64, ModelPhase.DECODE)
    assert ModelVariant.decode(2, 7, 3).dim_binding() == {"BATCH": 2, "PAST_SEQ": 7, "SEQ": 3}


def test_extras_add_and_override_symbols():
    variant = ModelVariant.prefill(2, 8).with_extra("EXPERTS", 4).with_extra("SEQ", 9)
    assert variant.dim_binding() == {"BATCH": 2, "SEQ": 9, "ROWS": 16, "EXPERTS": 4}
    assert variant.extra == (("EXPERTS", 4), ("SEQ", 9))
    assert ModelVariant.prefill(2, 8).extra == ()  # with_extra returns a new variant


def test_binding_for_restricts_to_a_module_s_symbols():
    variant = ModelVariant.decode(1, 10, 1)
    assert variant.binding_for(["SEQ", "BATCH"]) == {"SEQ": 1, "BATCH": 1}
    with pytest.raises(KeyError, match="binds no size for ROWS"):
        variant.binding_for(["ROWS"])


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: ModelVariant.prefill(0, 8), "batch must be a positive integer, got 0"),
        (lambda: ModelVariant.prefill(1, -2), "seq must be a positive integer, got -2"),
        (lambda: ModelVariant.decode(1, -1, 1), "past_seq must be a non-negative integer, got -1"),
        (lambda: ModelVariant.prefill(1, 8).with_extra("2X", 3), "'2X' is not a symbol name"),
        (lambda: ModelVariant.prefill(1, 8).with_extra("X", 0), "extra symbol 'X' must have a positive integer size"),
    ],
)
def test_invalid_variants(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_cache_keys_separate_what_differs():
    keys = {
        ModelVariant.prefill(1, 8).cache_key(),
        ModelVariant.decode(1, 7, 1).cache_key(),
        ModelVariant.encoder(1, 8).cache_key(),
        ModelVariant.prefill(2, 8).cache_key(),
        ModelVariant.prefill(1, 9).cache_key(),
        ModelVariant.prefill(1, 8).with_extra("E", 2).cache_key(),
        ModelVariant.prefill(1, 8).with_extra("E", 3).cache_key(),
    }
    assert len(keys) == 7
    assert ModelVariant.decode(1, 7, 1).cache_key() == ModelVariant.decode(1, 7, 1).cache_key()


def test_cache_key_is_sha256_of_the_canonical_text():
    variant = ModelVariant.decode(2, 64, 1).with_extra("E", 3)
    assert variant.canonical() == "phase=decode;batch=2;seq=1;past_seq=64;extra=E=3"
    assert variant.cache_key() == hashlib.sha256(variant.canonical().encode()).hexdigest()


def test_cache_key_is_stable_across_processes():
    variants = [
        "ModelVariant.prefill(1, 128)",
        "ModelVariant.decode(1, 64, 1)",
        "ModelVariant.encoder(4, 7).with_extra('EXPERTS', 8)",
    ]
    script = (
        "from rlx_mlir.dims.variants import ModelVariant\n"
        + "".join(f"print({v}.cache_key())\n" for v in variants)
    )
    # A different hash seed in the child: Python's own hash() would differ, ours must not.
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "12345"}
    ).stdout.split()
    assert out == [eval(v, {"ModelVariant": ModelVariant}).cache_key() for v in variants]


def test_a_compiled_dynamic_module_specialises_for_a_variant():
    g = GraphModule.mir("f")
    x = g.input("x", ("BATCH", "SEQ", 4))
    g.set_outputs(x * x)
    exe = g.compile()
    static = exe.specialize(ModelVariant.prefill(2, 3))
    assert static.signature.inputs[0].shape == (2, 3, 4)
    value = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(exe(value), value * value)  # reuses the variant compiled ahead
    info = exe.cache_info()
    assert (info.misses, info.hits, info.variants) == (1, 1, ((("BATCH", 2), ("SEQ", 3)),))


def test_a_decode_variant_binds_the_past_and_the_new_tokens():
    g = GraphModule.mir("append")
    past = g.input("past", ("BATCH", "PAST_SEQ", 4))
    new = g.input("new", ("BATCH", "SEQ", 4))
    joined = g.op(rlx.ConcatOp, past, new, axis=1)
    assert str(joined.shape[1]) == "PAST_SEQ + SEQ"
    g.set_outputs(joined)
    exe = g.compile()
    variant = ModelVariant.decode(batch=2, past_seq=5, new_tokens=1)
    assert exe.specialize(variant).signature.outputs[0].shape == (2, 6, 4)
    past_value = np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)
    new_value = np.random.default_rng(1).standard_normal((2, 1, 4)).astype(np.float32)
    np.testing.assert_array_equal(exe(past_value, new_value), np.concatenate([past_value, new_value], axis=1))
    assert (exe.cache_info().misses, exe.cache_info().hits) == (1, 1)
