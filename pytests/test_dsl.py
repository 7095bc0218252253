"""The definition layer: op classes, builders, typed walks, IRDL loading, verification."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from mlir import ir
from mlir.dialects import func, memref

import rlx_mlir
from rlx_mlir.dialects import rlx, rlx_hir, verifier
from rlx_mlir.dsl import Dialect, I64Attr, VerifyError, attribute, operand, result, same_as
from rlx_mlir.ir.diagnostics import DiagnosticCollector
from rlx_mlir.ir.walk import collect_ops, is_op


def _tensor(*shape, element="f32"):
    return ir.RankedTensorType.get(list(shape), ir.Type.parse(element))


def test_builder_signatures_read_like_python():
    assert str(inspect.signature(rlx.MatmulOp.__init__)) == "(self, lhs, rhs, *, result_type=None, loc=None, ip=None)"
    assert str(inspect.signature(rlx.TransposeOp.__init__)) == "(self, input, perm, *, result_type=None, loc=None, ip=None)"
    # reshape cannot infer its result: the type is required
    assert str(inspect.signature(rlx.ReshapeOp.__init__)) == "(self, input, *, result_type, loc=None, ip=None)"


def test_build_infers_result_types_and_exposes_accessors():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        block = module.body
        with ir.InsertionPoint(block):
            x = _placeholder(_tensor(2, 4, 3))
            w = _placeholder(_tensor(3, 5))
            product = rlx.MatmulOp(x, w)
            transposed = rlx.TransposeOp(product, [0, 2, 1])
        assert product.result.type == _tensor(2, 4, 5)
        assert transposed.result.type == _tensor(2, 5, 4)
        assert transposed.perm == [0, 2, 1]
        assert transposed.input == product.result
        assert rlx.MatmulOp.OPERATION_NAME == "rlx.matmul"


def _placeholder(type_):
    # A value of any type, for building ops in isolation.
    return ir.Operation.create("builtin.unrealized_conversion_cast", results=[type_]).result


def test_builder_raises_at_the_call_with_the_shapes():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            x = _placeholder(_tensor(2, 3))
            w = _placeholder(_tensor(4, 5))
            with pytest.raises(ValueError, match=r"'rlx.matmul' op contracting dimensions differ: lhs \[2, 3\] has K = 3"):
                rlx.MatmulOp(x, w)
            with pytest.raises(TypeError, match="missing a required argument: 'rhs'"):
                rlx.MatmulOp(x)
            with pytest.raises(TypeError, match="missing a required argument: 'result_type'"):
                rlx.ReshapeOp(x)


def test_walks_return_the_typed_op_classes():
    text = """
    func.func @f(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
      %0 = "rlx.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %1 = "rlx.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
      return %1 : tensor<3x2xf32>
    }
    """
    with rlx_mlir.make_context():
        module = ir.Module.parse(text)
        seen = []
        module.operation.walk(lambda op: seen.append(type(op.opview)) or ir.WalkResult.ADVANCE)
    assert rlx.ReluOp in seen and rlx.TransposeOp in seen


def test_collect_ops_selects_by_op_class():
    text = """
    func.func @f(%a: tensor<2x3xf32>, %g: tensor<3xf32>) -> tensor<2x3xf32> {
      %0 = "rlx.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %1 = "rlx.rms_norm"(%0, %g, %g) {axis = -1 : i64, eps = 1.0e-06 : f32}
          : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %2 = "rlx.layer_norm"(%1, %g, %g) {axis = -1 : i64, eps = 1.0e-06 : f32}
          : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      return %2 : tensor<2x3xf32>
    }
    """
    with rlx_mlir.make_context():
        module = ir.Module.parse(text)
        relus = collect_ops(module.operation, rlx.ReluOp)
        assert [type(op) for op in relus] == [rlx.ReluOp]  # typed views
        # a tuple of classes, in walk order
        picked = collect_ops(module.operation, (rlx.LayerNormOp, rlx.ReluOp))
        assert [type(op) for op in picked] == [rlx.ReluOp, rlx.LayerNormOp]
        # an abstract base selects its concrete subclasses, as isinstance does
        axis_norm = rlx.RmsNormOp.__mro__[1]
        assert axis_norm is rlx.LayerNormOp.__mro__[1] and "OPERATION_NAME" not in vars(axis_norm)
        norms = collect_ops(module.operation, axis_norm)
        assert [type(op) for op in norms] == [rlx.RmsNormOp, rlx.LayerNormOp]
        # upstream classes work the same way
        (function,) = collect_ops(module.operation, func.FuncOp)
        assert isinstance(function, func.FuncOp)
        returns = collect_ops(module.operation, lambda op: is_op(op, func.ReturnOp))
        assert [op.name for op in returns] == ["func.return"] and isinstance(returns[0], ir.Operation)
        assert not is_op(relus[0], rlx.LayerNormOp) and is_op(relus[0].operation, rlx.ReluOp)
        with pytest.raises(TypeError, match="expected an op class"):
            collect_ops(module.operation, (rlx.ReluOp, int))


def test_a_view_whose_op_has_a_name_attribute_is_still_matched():
    # memref.get_global's view exposes its symbol as `.name`: matching must read the op's name.
    text = """
    memref.global "private" @g : memref<2xf32> = dense<1.0>
    func.func @f() -> memref<2xf32> {
      %0 = memref.get_global @g : memref<2xf32>
      return %0 : memref<2xf32>
    }
    """
    with rlx_mlir.make_context():
        module = ir.Module.parse(text)
        (get,) = collect_ops(module.operation, memref.GetGlobalOp)
        assert is_op(get, memref.GetGlobalOp) and not is_op(get, memref.GlobalOp)


def test_passes_match_ops_by_class_not_by_name_string():
    # `op.name == "rlx.matmul"` breaks silently when an op is renamed; the op classes do not.
    package = Path(rlx_mlir.__file__).parent
    by_name = re.compile(r"""\.name\s*(==|!=)\s*"[a-z_]+\.[a-z_.]+"|\.name\s+(not\s+)?in\s+\(\s*"[a-z_]+\.""")
    layers = ("conversion", "transforms", "dialects", "dims", "frontend", "models", "ir")
    found = [
        f"{path.relative_to(package)}:{number}: {line.strip()}"
        for layer in layers
        for path in sorted((package / layer).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if by_name.search(line)
    ]
    assert found == []


def test_same_as_declares_another_ops_field_again():
    # HIR blocks reuse the declarations of the MIR fields they pass on.
    assert rlx.AttentionOp.q.definition.name == "q"
    hir_q, mir_q = rlx_hir.AttentionOp.q.definition, rlx.AttentionOp.q.definition
    assert hir_q is not mir_q and (hir_q.constraint, hir_q.variadicity, hir_q.doc) == (
        mir_q.constraint, mir_q.variadicity, mir_q.doc
    )
    hir_kind, mir_kind = rlx_hir.LlamaDecoderBlockOp.mask_kind.definition, rlx.AttentionOp.mask_kind.definition
    assert hir_kind.constraint is mir_kind.constraint and hir_kind.default == "causal" and mir_kind.required
    assert rlx_hir.AttentionOp.mask.definition.doc != rlx.AttentionOp.mask.definition.doc  # its own description

    class Toy(Dialect, name="rlx_test_same_as"):
        """A dialect for this test."""

    class CopyOp(Toy.Operation, name="copy"):
        """Copies `input`."""

        input = same_as(rlx.ReluOp.input, doc="the tensor to copy")
        result = same_as(rlx.ReluOp.result)

    assert [d.name for d in CopyOp._operand_defs] == ["input"]
    assert CopyOp.input.definition.doc == "the tensor to copy"
    assert CopyOp.result.definition.constraint is rlx.ReluOp.result.definition.constraint
    with pytest.raises(TypeError, match="same_as takes a declared field"):
        same_as("input")
    with pytest.raises(TypeError, match="only a non-optional attribute has a default"):
        same_as(rlx.AttentionOp.window, default=4)


def test_dialect_loads_once_per_context():
    context = rlx_mlir.make_context()
    assert rlx.Rlx.is_loaded(context)
    rlx.Rlx.load(context)  # a second load is a no-op, not an error
    assert not rlx.Rlx.is_loaded(ir.Context())
    with context:
        ir.Module.parse('func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> { %0 = "rlx.neg"(%a) : (tensor<2xf32>) -> tensor<2xf32> return %0 : tensor<2xf32> }')


def test_irdl_lists_every_op_with_its_fields():
    text = rlx.Rlx.irdl_text()
    for op in rlx.Rlx.ops:
        assert f"irdl.operation @{op.OPERATION_NAME.split('.', 1)[1]} " in text
    assert 'irdl.attributes {"perm" = ' in text


def test_verifier_reports_every_bad_op_at_its_location():
    text = (
        "func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {\n"
        '  %0 = "rlx.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>\n'
        '  %1 = "rlx.transpose"(%0) {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n'
        "  return %1 : tensor<2x3xf32>\n"
        "}\n"
    )
    context = rlx_mlir.make_context()
    with context, DiagnosticCollector(context) as diagnostics:
        module = ir.Operation.parse(text, source_name="t.mlir")
        assert not verifier.verify(module)
    messages = [(d.position.line, d.message) for d in diagnostics.errors]
    assert messages == [
        (2, "'rlx.add' op operand shapes [2, 3] and [4] do not broadcast"),
        (3, "'rlx.transpose' op perm [0, 0] is not a permutation of the 2 dimensions of [2, 3]"),
    ]


def test_a_new_dialect_in_a_few_lines():
    class Toy(Dialect, name="rlx_test_toy"):
        """A dialect defined in a test."""

    class ScaleOp(Toy.Operation, name="scale"):
        """Multiplies by an integer factor."""

        input = operand(doc="values")
        factor = attribute(I64Attr, "the factor", default=2)
        result = result(doc="scaled values")

        @classmethod
        def infer_result_type(cls, input, factor):
            if factor == 0:
                raise VerifyError("factor must not be zero")
            return input

    assert ScaleOp.OPERATION_NAME == "rlx_test_toy.scale"
    assert str(inspect.signature(ScaleOp.__init__)) == "(self, input, *, factor=2, result_type=None, loc=None, ip=None)"
    assert 'irdl.attributes {"factor" = ' in Toy.irdl_text()
    context = ir.Context()
    Toy.load(context)
    with context, ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            op = ScaleOp(_placeholder(_tensor(3)))
            assert op.factor == 2
            with pytest.raises(ValueError, match="factor must not be zero"):
                ScaleOp(_placeholder(_tensor(3)), factor=0)


def test_ops_with_several_results_infer_and_verify_them():
    class Pair(Dialect, name="rlx_test_pair"):
        """A dialect defined in a test."""

        pass

    class SplitOp(Pair.Operation, name="split"):
        """Splits the last dimension in two halves."""

        input = operand(doc="values")
        low = result(doc="first half")
        high = result(doc="second half")

        @classmethod
        def infer_result_types(cls, input):
            shape = list(input.shape)
            if shape[-1] % 2:
                raise VerifyError(f"last dimension {shape[-1]} is odd")
            half = ir.RankedTensorType.get(shape[:-1] + [shape[-1] // 2], input.element_type)
            return [half, half]

    assert str(inspect.signature(SplitOp.__init__)) == "(self, input, *, result_types=None, loc=None, ip=None)"
    context = ir.Context()
    Pair.load(context)
    with context, ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            op = SplitOp(_placeholder(_tensor(3, 8)))
            assert [r.type for r in op.operation.results] == [_tensor(3, 4)] * 2
            with pytest.raises(ValueError, match="last dimension 7 is odd"):
                SplitOp(_placeholder(_tensor(7)))
            wrong = SplitOp(_placeholder(_tensor(4)), result_types=[_tensor(2), _tensor(3)])
            with pytest.raises(VerifyError, match=r"result #1 \('high'\) type tensor<3xf32> does not match the inferred type tensor<2xf32>"):
                wrong.verify_invariants()


def test_attributes_must_carry_their_documented_type():
    """`eps` is documented as a 32-bit float attribute and `axis` as a 64-bit integer one
    (dialect/rlx.md): an f64 eps or an i32 axis is refused by the builder as by the verifier."""
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            x, g = _placeholder(_tensor(4, 8)), _placeholder(_tensor(8))
            f64_eps = ir.FloatAttr.get_f64(1e-5)
            with pytest.raises(ValueError, match=r"attribute 'eps' must be a 32-bit float attribute \(f32\), but got 1.000000e-05 : f64"):
                rlx.RmsNormOp(x, g, g, eps=f64_eps)
            i32_axis = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), -1)
            with pytest.raises(ValueError, match=r"attribute 'axis' must be a 64-bit integer attribute \(i64\), but got -1 : i32"):
                rlx.SoftmaxOp(x, axis=i32_axis)
            # Python numbers become the documented types.
            assert str(rlx.RmsNormOp(x, g, g, axis=-1, eps=1e-5).operation.attributes["eps"].type) == "f32"
            assert str(rlx.SoftmaxOp(x, axis=1).operation.attributes["axis"].type) == "i64"
