"""A seeded generator of random valid MIR programs (`func.func @f` of `rlx.*` ops, dialect/rlx.md).

`generate(seed)` builds a program op by op: each step picks an op family (elementwise unary and
NumPy-broadcast binary ops, compare + where, casts through f16 / bf16 / i1, the views narrow /
expand / transpose / reshape / concat / gather, reductions, softmax, cumsum, argmax, RMS and layer
norms, matmuls with tiny K and up to ~300 rows, RoPE with full and partial rotary), takes its operands from the values made so far
(recent ones first, so views are read, cast, reduced and multiplied later) or from new arguments,
and evaluates the reference (reference.py) at once: an op that is not well defined on the inputs
drawn (log of a negative value, a near-zero divisor, a comparison of near-equal values used as
indices...) is dropped and another is drawn. Several values are returned, some of them also used
by later ops. Shapes are small (compile time), with a few odd sizes (7, 17, 33...).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Optional

import numpy as np

from . import reference
from .reference import FLOATS, OutOfDomain

MAX_ELEMENTS = 20000
ODD_SIZES = (7, 9, 13, 17, 31, 33)
NUMPY_TYPES = {"f32": np.float32, "f16": np.float16, "i1": np.bool_, "i32": np.int32, "i64": np.int64}
BOUNDARY_TYPES = ("f32", "f16", "i1", "i32", "i64")  # element types numpy can pass in and out (no bf16)


@dataclasses.dataclass(frozen=True)
class Arg:
    name: str
    shape: tuple
    dtype: str


@dataclasses.dataclass
class Op:
    name: str
    kind: str  # "add" for rlx.add
    operands: tuple
    attrs: dict
    shape: tuple
    dtype: str
    constant: Optional[np.ndarray] = None  # the value of an rlx.constant


@dataclasses.dataclass
class Program:
    seed: int
    inputs: list  # [Arg]
    arrays: dict  # argument name -> numpy array
    ops: list  # [Op], in order
    outputs: list  # value names, in return order (a name may repeat)

    def type_of(self, name) -> tuple:
        for value in itertools.chain(self.inputs, self.ops):
            if value.name == name:
                return value.shape, value.dtype
        raise KeyError(name)

    def text(self) -> str:
        params = ", ".join(f"%{a.name}: {tensor_type(a.shape, a.dtype)}" for a in self.inputs)
        results = [tensor_type(*self.type_of(name)) for name in self.outputs]
        lines = [f"func.func @f({params}) -> ({', '.join(results)}) {{"]
        for op in self.ops:
            operand_types = ", ".join(tensor_type(*self.type_of(name)) for name in op.operands)
            attrs = dict(op.attrs)
            if op.kind == "constant":
                attrs["value"] = _dense(op.constant, op.shape, op.dtype)
            attr_text = " {" + ", ".join(f"{k} = {_attribute(v)}" for k, v in attrs.items()) + "}" if attrs else ""
            operands = ", ".join(f"%{name}" for name in op.operands)
            lines.append(f'  %{op.name} = "rlx.{op.kind}"({operands}){attr_text} : ({operand_types}) -> '
                         f"{tensor_type(op.shape, op.dtype)}")
        lines.append(f"  return {', '.join('%' + n for n in self.outputs)} : {', '.join(results)}")
        lines.append("}")
        return "\n".join(lines) + "\n"


def tensor_type(shape, dtype) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{dtype}>"


class _Dense(str):
    """An attribute already in MLIR syntax."""


def _dense(value, shape, dtype) -> _Dense:
    if dtype in FLOATS:
        text = np.array2string(np.asarray(value, np.float64).reshape(shape), separator=", ",
                               threshold=10 ** 9, floatmode="unique")
        text = text.replace(".,", ".0,").replace(".]", ".0]")
        if not shape and text.endswith("."):
            text += "0"
    else:
        text = np.array2string(np.asarray(value).reshape(shape), separator=", ", threshold=10 ** 9)
    return _Dense(f"dense<{text}> : {tensor_type(shape, dtype)}")


def _attribute(value) -> str:
    if isinstance(value, _Dense):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{value:.6e} : f32"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple):
        return f"array<i64{': ' if value else ''}{', '.join(str(v) for v in value)}>"
    raise TypeError(value)


def input_array(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Uniform in [-2, 2]; a third of the arguments on a grid of quarters (exact ties and equalities)."""
    values = rng.uniform(-2.0, 2.0, size=shape)
    if rng.random() < 0.33:
        values = np.round(values * 4) / 4
    if dtype == "i1":
        return values > 0
    return values.astype(NUMPY_TYPES[dtype])


class _Retry(Exception):
    """This op cannot be built from the values at hand: draw another."""


class Generator:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.program = Program(seed, [], {}, [], [])
        self.values: dict[str, reference.RefValue] = {}

    # ------------------------------------------------------------------------------ bookkeeping

    def _name(self) -> str:
        return f"v{len(self.program.ops) + len(self.program.inputs)}"

    def new_input(self, shape, dtype="f32") -> str:
        """A new argument (or, for bf16, a cast of a new f32 argument)."""
        if dtype == "bf16":
            return self.emit("cast", [self.new_input(shape, "f32")], {}, shape, "bf16")
        name = f"a{len(self.program.inputs)}"
        array = input_array(self.rng, tuple(shape), dtype)
        self.program.inputs.append(Arg(name, tuple(shape), dtype))
        self.program.arrays[name] = array
        self.values[name] = reference.input_value(array, dtype)
        return name

    def emit(self, kind, operands, attrs, shape, dtype, constant=None) -> str:
        shape = tuple(int(d) for d in shape)
        if int(np.prod(shape)) > MAX_ELEMENTS:
            raise _Retry("too large")
        op = Op(self._name(), kind, tuple(operands), attrs, shape, dtype, constant)
        self.values[op.name] = reference.evaluate_op(op, [self.values[n] for n in operands])
        self.program.ops.append(op)
        return op.name

    def shape(self, name) -> tuple:
        return tuple(self.values[name].value.shape)

    def dtype(self, name) -> str:
        return self.values[name].dtype

    def pick(self, accept=lambda name: True, exact=False) -> str:
        """A value made so far, recent ones likelier; `exact`: prefer values with no rounding error."""
        names = [n for n in self.values if accept(n)]
        if exact:
            names = [n for n in names if not np.any(self.values[n].err)] or names
        if not names:
            raise _Retry("no operand")
        weights = np.arange(1, len(names) + 1, dtype=np.float64) ** 2
        return names[self.rng.choice(len(names), p=weights / weights.sum())]

    def pick_float(self, min_rank=0, exact=False) -> str:
        return self.pick(lambda n: self.dtype(n) in FLOATS and len(self.shape(n)) >= min_rank, exact)

    def size(self) -> int:
        if self.rng.random() < 0.12:
            return int(self.rng.choice(ODD_SIZES))
        return int(self.rng.integers(1, 7))

    def random_shape(self, rank=None) -> tuple:
        if rank is None:
            rank = int(self.rng.choice([0, 1, 2, 3, 4], p=[0.05, 0.25, 0.4, 0.25, 0.05]))
        return tuple(self.size() for _ in range(rank))

    def operand(self, shape, dtype) -> str:
        """A value of exactly this shape and dtype: an existing one, or a new argument."""
        existing = [n for n in self.values if self.shape(n) == tuple(shape) and self.dtype(n) == dtype]
        if existing and self.rng.random() < 0.5:
            return existing[self.rng.integers(len(existing))]
        if dtype in FLOATS and self.rng.random() < 0.15 and not shape:
            constant = float(self.rng.choice([0.5, 1.5, -2.0, 3.0, -0.25]))
            return self.emit("constant", [], {}, (), dtype, constant=np.array(constant))
        return self.new_input(shape, dtype)

    def broadcast_partner(self, shape) -> tuple:
        """A shape that broadcasts with `shape` (smaller, equal or larger)."""
        shape = list(shape)
        choice = self.rng.random()
        if choice < 0.3:
            return tuple(shape)
        if choice < 0.55:
            return tuple(1 if self.rng.random() < 0.5 else d for d in shape)
        if choice < 0.75:
            return tuple(shape[self.rng.integers(0, len(shape) + 1):])
        grown = [d if d != 1 or self.rng.random() < 0.5 else self.size() for d in shape]
        return tuple([self.size()] * int(self.rng.integers(0, 2)) + grown)

    # ------------------------------------------------------------------------------- op families

    def unary(self):
        x = self.pick_float()
        kind = str(self.rng.choice(list(reference.UNARY)))
        return self.emit(kind, [x], {}, self.shape(x), self.dtype(x))

    def binary(self):
        x = self.pick_float()
        kind = str(self.rng.choice(["add", "sub", "mul", "div", "max", "min", "pow", "add", "mul", "sub"]))
        dtype = self.dtype(x)
        others = [n for n in self.values if self.dtype(n) == dtype and _broadcasts(self.shape(n), self.shape(x))]
        if others and self.rng.random() < 0.4:
            y = others[self.rng.integers(len(others))]
        else:
            y = self.operand(self.broadcast_partner(self.shape(x)), dtype)
        if self.rng.random() < 0.5:
            x, y = y, x
        return self.emit(kind, [x, y], {}, np.broadcast_shapes(self.shape(x), self.shape(y)), dtype)

    def compare_where(self):
        a = self.pick_float(exact=True)
        b = self.operand(self.broadcast_partner(self.shape(a)), self.dtype(a))
        predicate = str(self.rng.choice(list(reference.COMPARE)))
        shape = np.broadcast_shapes(self.shape(a), self.shape(b))
        condition = self.emit("compare", [a, b], {"predicate": predicate}, shape, "i1")
        if self.rng.random() < 0.2:
            return condition  # an i1 value, returned or used later
        on_true, on_false = (a, b) if self.rng.random() < 0.5 else (b, a)
        shape = np.broadcast_shapes(shape, self.shape(on_true), self.shape(on_false))
        return self.emit("where", [condition, on_true, on_false], {}, shape, self.dtype(a))

    def cast(self):
        x = self.pick()
        source = self.dtype(x)
        if source == "f32":
            target = str(self.rng.choice(["f16", "bf16", "bf16", "f16", "i1", "i32"]))
        elif source in ("f16", "bf16"):
            target = str(self.rng.choice(["f32", "f32", "f16", "bf16"]))
        else:
            target = "f32"
        if target == source:
            raise _Retry("no-op cast")
        name = self.emit("cast", [x], {}, self.shape(x), target)
        if target in ("f16", "bf16") and source == "f32" and self.rng.random() < 0.4:
            name = getattr(self, str(self.rng.choice(["transpose", "narrow", "expand", "reshape"])))(name)
            return self.emit("cast", [name], {}, self.shape(name), "f32")  # f32 -> low precision, a view, back
        if target not in FLOATS and self.rng.random() < 0.6:
            name = self.emit("cast", [name], {}, self.shape(x), "f32")
        return name

    def low_precision_view(self):
        """f32 -> f16 / bf16, a view in low precision (a transpose mostly), then back to f32."""
        if self.rng.random() < 0.5:
            x = self.pick(lambda n: self.dtype(n) == "f32" and len(self.shape(n)) >= 2)
        else:
            x = self.new_input((int(self.rng.choice(ODD_SIZES + (4, 8, 16))), int(self.rng.choice([2, 4, 8]))))
        low = self.emit("cast", [x], {}, self.shape(x), str(self.rng.choice(["bf16", "f16", "bf16"])))
        viewed = getattr(self, str(self.rng.choice(["transpose", "transpose", "narrow", "expand"])))(low)
        return self.emit("cast", [viewed], {}, self.shape(viewed), "f32")

    def narrow(self, x=None):
        x = x or self.pick(lambda n: len(self.shape(n)) >= 1)
        shape = self.shape(x)
        axis = int(self.rng.integers(-len(shape), len(shape)))
        size = shape[axis]
        length = 0 if self.rng.random() < 0.03 else int(self.rng.integers(1, size + 1))
        start = int(self.rng.integers(0, size - length + 1))
        result = list(shape)
        result[axis] = length
        return self.emit("narrow", [x], {"axis": axis, "start": start, "len": length}, result, self.dtype(x))

    def expand(self, x=None):
        x = x or self.pick()
        shape = self.shape(x)
        if self.rng.random() < 0.3:
            target = shape  # the identity expand
        else:
            target = tuple([self.size() for _ in range(int(self.rng.integers(0, 3)))]
                           + [d if d != 1 else int(self.rng.choice([1, 2, 3, 5])) for d in shape])
        return self.emit("expand", [x], {"shape": tuple(target)}, target, self.dtype(x))

    def transpose(self, x=None):
        x = x or self.pick(lambda n: len(self.shape(n)) >= 1)
        rank = len(self.shape(x))
        perm = tuple(range(rank)) if self.rng.random() < 0.25 else tuple(int(p) for p in self.rng.permutation(rank))
        return self.emit("transpose", [x], {"perm": perm}, [self.shape(x)[p] for p in perm], self.dtype(x))

    def reshape(self, x=None):
        x = x or self.pick(lambda n: int(np.prod(self.shape(n))) > 0)
        count = int(np.prod(self.shape(x)))
        factors = [p for p in range(2, count + 1) for _ in range(_multiplicity(count, p))]
        self.rng.shuffle(factors)
        rank = int(self.rng.integers(0 if count == 1 else 1, 5))
        target = [1] * max(rank, 1)
        for factor in factors:
            target[self.rng.integers(len(target))] *= factor
        target = tuple(target[:rank]) if rank else ()
        return self.emit("reshape", [x], {}, target, self.dtype(x))

    def concat(self):
        x = self.pick(lambda n: len(self.shape(n)) >= 1)
        shape, dtype = self.shape(x), self.dtype(x)
        axis = int(self.rng.integers(-len(shape), len(shape)))
        fits = [n for n in self.values if self.dtype(n) == dtype and _concatenable(self.shape(n), shape, axis)]
        if fits and self.rng.random() < 0.6:
            y = fits[self.rng.integers(len(fits))]
        elif self.rng.random() < 0.8:
            other = list(shape)
            other[axis] = self.size()
            y = self.new_input(other, dtype)
        else:
            y = x  # a value joined with itself
        if self.rng.random() < 0.5:
            x, y = y, x
        result = list(self.shape(x))
        result[axis] += self.shape(y)[axis]
        return self.emit("concat", [x, y], {"axis": axis}, result, dtype)

    def gather(self):
        table = self.pick(lambda n: len(self.shape(n)) >= 1 and 0 not in self.shape(n))
        shape = self.shape(table)
        axis = int(self.rng.integers(-len(shape), len(shape)))
        size = shape[axis]
        certain = [n for n in self.values if self.dtype(n) in ("i32", "i64") and not np.any(self.values[n].err)]
        if certain and self.rng.random() < 0.4:
            indices = certain[self.rng.integers(len(certain))]
        else:
            index_shape = self.random_shape(int(self.rng.choice([0, 1, 1, 2])))
            dtype = str(self.rng.choice(["i64", "i32"]))
            constant = self.rng.integers(-1, size + 1, size=index_shape)  # -1 and size: clamped
            indices = self.emit("constant", [], {}, index_shape, dtype, constant=constant)
        axis_ = axis % len(shape)
        result = shape[:axis_] + self.shape(indices) + shape[axis_ + 1:]
        return self.emit("gather", [table, indices], {"axis": axis}, result, self.dtype(table))

    def reduce(self):
        x = self.pick_float(min_rank=1)
        shape = self.shape(x)
        rank = len(shape)
        count = int(self.rng.integers(1, rank + 1))
        axes = [int(a) for a in self.rng.choice(rank, size=count, replace=False)]
        axes = tuple(a - rank if self.rng.random() < 0.3 else a for a in axes)
        kind = str(self.rng.choice(["sum", "mean", "max", "min", "prod", "sum", "mean"]))
        if kind == "prod" and np.prod([shape[a] for a in axes]) > 6:
            kind = "sum"
        keep = bool(self.rng.random() < 0.4)
        resolved = {a % rank for a in axes}
        result = [1 if d in resolved else s for d, s in enumerate(shape) if keep or d not in resolved]
        return self.emit("reduce", [x], {"kind": kind, "axes": axes, "keep_dim": keep}, result, self.dtype(x))

    def softmax(self):
        x = self.pick_float(min_rank=1)
        axis = int(self.rng.integers(-len(self.shape(x)), len(self.shape(x))))
        return self.emit("softmax", [x], {"axis": axis}, self.shape(x), self.dtype(x))

    def cumsum(self):
        x = self.pick_float(min_rank=1)
        axis = int(self.rng.integers(-len(self.shape(x)), len(self.shape(x))))
        attrs = {"axis": axis, "exclusive": bool(self.rng.random() < 0.3)}
        return self.emit("cumsum", [x], attrs, self.shape(x), self.dtype(x))

    def argmax(self):
        x = self.pick_float(min_rank=1, exact=True)
        shape = self.shape(x)
        axis = int(self.rng.integers(-len(shape), len(shape)))
        keep = bool(self.rng.random() < 0.3)
        result = [1 if d == axis % len(shape) else s for d, s in enumerate(shape) if keep or d != axis % len(shape)]
        return self.emit("argmax", [x], {"axis": axis, "keep_dim": keep}, result, "i64")

    def norm(self):
        x = self.pick_float(min_rank=1)
        shape, dtype = self.shape(x), self.dtype(x)
        axis = -1 if self.rng.random() < 0.5 else int(self.rng.integers(-len(shape), len(shape)))
        gamma, beta = (self.operand((shape[axis],), dtype) for _ in range(2))
        kind = str(self.rng.choice(["rms_norm", "layer_norm"]))
        eps = float(self.rng.choice([1e-5, 1e-6]))
        return self.emit(kind, [x, gamma, beta], {"axis": axis, "eps": eps}, shape, dtype)

    def matmul(self):
        choice = self.rng.random()
        if choice < 0.45:  # a fresh product of odd shape: tiny K, up to ~300 rows, maybe batched
            m = int(self.rng.choice([1, 2, 3, 5, 8, 17, 64, 256, 257, 263, 300]))
            k = int(self.rng.integers(1, 6)) if self.rng.random() < 0.6 else self.size()
            n = int(self.rng.choice([1, 3, 8, 31, 32, 33, 64]))
            batch = tuple(self.size() for _ in range(int(self.rng.choice([0, 0, 1])))) if m <= 64 else ()
            dtype = str(self.rng.choice(["f32", "f32", "f32", "f16", "bf16"]))
            lhs = self.new_input(batch + (m, k), dtype)
            rhs_batch = batch if batch and self.rng.random() < 0.5 else ()
            rhs = self.new_input(rhs_batch + (k, n), dtype)
        else:
            lhs = self.pick_float(min_rank=2)
            *batch, m, k = self.shape(lhs)
            dtype = self.dtype(lhs)
            if choice < 0.55 and len(self.shape(lhs)) == 2:  # x @ x^T: a view feeding the product
                rhs = self.emit("transpose", [lhs], {"perm": (1, 0)}, (k, m), dtype)
            else:
                rhs = self.operand((k, int(self.rng.choice([1, 2, 5, 8, 33]))), dtype)
        result = np.broadcast_shapes(self.shape(lhs)[:-2], self.shape(rhs)[:-2]) + (self.shape(lhs)[-2],
                                                                                     self.shape(rhs)[-1])
        return self.emit("matmul", [lhs, rhs], {}, result, dtype)

    def rope(self):
        """rlx.rope on `[B, S, heads * head_dim]` (a value made so far when one fits, else a new one),
        full or partial rotary; the cos / sin tables `[S, n_rot / 2]` are any values of x's type."""
        head_dim = int(self.rng.choice([2, 4, 6, 8, 16]))
        n_rot = 2 * int(self.rng.integers(1, head_dim // 2 + 1))
        if self.rng.random() < 0.6:
            x = self.pick(lambda n: self.dtype(n) in FLOATS and len(self.shape(n)) == 3
                          and self.shape(n)[2] % head_dim == 0 and 0 not in self.shape(n))
        else:
            shape = (self.size(), self.size(), head_dim * int(self.rng.integers(1, 4)))
            x = self.new_input(shape, str(self.rng.choice(["f32", "f32", "f16", "bf16"])))
        shape, dtype = self.shape(x), self.dtype(x)
        cos, sin = (self.operand((shape[1], n_rot // 2), dtype) for _ in range(2))
        return self.emit("rope", [x, cos, sin], {"head_dim": head_dim, "n_rot": n_rot}, shape, dtype)

    def attention(self):
        """rlx.attention with grouped-query heads and every mask kind: a few queries and keys (the
        plain chain), or enough of both for the CPU pipeline's tiled loop nest (blocks of 16 to 64).
        q, k, v and the mask are values made so far where one fits, else new arguments."""
        head_dim, kv_heads, group = (int(self.rng.choice(c)) for c in ([4, 8, 16], [1, 2], [1, 2]))
        heads = kv_heads * group
        if self.rng.random() < 0.5:
            sq, sk = self.size(), self.size()
        else:
            sq, sk = (int(self.rng.choice([16, 32, 48, 64, 80, 96, 128])) for _ in range(2))
        batch = int(self.rng.choice([1, 1, 2]))
        dtype = str(self.rng.choice(["f32", "f32", "f32", "f16", "bf16"]))
        q = self.operand((batch, sq, heads * head_dim), dtype)
        k, v = (self.operand((batch, sk, kv_heads * head_dim), dtype) for _ in range(2))
        kind = str(self.rng.choice(["none", "causal", "causal", "sliding_window", "custom", "bias"]))
        attrs = {"num_heads": heads, "head_dim": head_dim, "mask_kind": kind}
        operands = [q, k, v]
        if kind == "sliding_window":
            attrs["window"] = int(self.rng.integers(1, sk + 3))
        if kind == "custom":
            operands.append(self.operand((batch, sk), dtype))
        if kind == "bias":
            operands.append(self.operand((batch, heads, sq, sk), dtype))
        if self.rng.random() < 0.2:
            attrs["score_scale"] = float(self.rng.choice([0.125, 0.5, 1.0]))
        if self.rng.random() < 0.15:
            attrs["softcap"] = float(self.rng.choice([1.0, 5.0]))
        return self.emit("attention", operands, attrs, (batch, sq, heads * head_dim), dtype)

    FAMILIES = {
        "unary": 12, "binary": 16, "compare_where": 6, "cast": 9, "narrow": 8, "expand": 5, "transpose": 6,
        "reshape": 5, "concat": 5, "gather": 5, "reduce": 7, "softmax": 3, "cumsum": 3, "argmax": 3,
        "norm": 4, "matmul": 5, "low_precision_view": 3, "rope": 3, "attention": 3,
    }

    # ------------------------------------------------------------------------------------ driver

    def step(self) -> bool:
        names, weights = zip(*self.FAMILIES.items())
        family = str(self.rng.choice(names, p=np.array(weights) / sum(weights)))
        ops, inputs = len(self.program.ops), len(self.program.inputs)
        try:
            getattr(self, family)()
            return True
        except (_Retry, OutOfDomain, ValueError, ZeroDivisionError, FloatingPointError):
            for op in self.program.ops[ops:]:
                del self.values[op.name]
            for arg in self.program.inputs[inputs:]:
                del self.values[arg.name]
                del self.program.arrays[arg.name]
            del self.program.ops[ops:], self.program.inputs[inputs:]
            return False

    def build(self, ops: int) -> Program:
        self.new_input(self.random_shape(), "f32" if self.rng.random() < 0.85 else "f16")
        if self.rng.random() < 0.5:
            self.new_input(self.random_shape(), "f32")
        for _ in range(ops * 6):
            if len(self.program.ops) >= ops:
                break
            self.step()
        self.choose_outputs()
        return prune(self.program)

    def choose_outputs(self):
        program = self.program
        returnable = [op.name for op in program.ops if op.dtype in BOUNDARY_TYPES]
        last = program.ops[-1] if program.ops else None
        if last is not None and last.dtype == "bf16":
            returnable.append(self.emit("cast", [last.name], {}, last.shape, "f32"))
        if not returnable:
            returnable.append(self.emit("neg", [program.inputs[0].name], {}, program.inputs[0].shape,
                                        program.inputs[0].dtype) if program.inputs[0].dtype in FLOATS else
                              self.emit("cast", [program.inputs[0].name], {}, program.inputs[0].shape, "f32"))
        outputs = [returnable[-1]]
        extra = int(self.rng.choice([0, 1, 1, 2, 3]))
        for name in self.rng.permutation(returnable[:-1])[:extra]:
            outputs.append(str(name))
        if self.rng.random() < 0.03:
            outputs.append(outputs[0])  # one value returned twice
        program.outputs = outputs


def _broadcasts(a, b) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _concatenable(a, b, axis) -> bool:
    return len(a) == len(b) and all(x == y for d, (x, y) in enumerate(zip(a, b)) if d != axis % len(b))


def _multiplicity(n, p) -> int:
    count = 0
    while n % p == 0 and all(p % q for q in range(2, int(p ** 0.5) + 1)):
        n //= p
        count += 1
    return count


def prune(program: Program) -> Program:
    """Drops ops and arguments that no output depends on."""
    live = set(program.outputs)
    kept = []
    for op in reversed(program.ops):
        if op.name in live:
            kept.append(op)
            live.update(op.operands)
    inputs = [arg for arg in program.inputs if arg.name in live]
    return Program(program.seed, inputs, {a.name: program.arrays[a.name] for a in inputs}, kept[::-1],
                   list(program.outputs))


def generate(seed: int, ops: Optional[int] = None) -> Program:
    """The program of this seed: `ops` ops (default: 2 to 12, drawn from the seed) before pruning."""
    generator = Generator(seed)
    if ops is None:
        ops = int(generator.rng.integers(2, 13))
    return generator.build(ops)
