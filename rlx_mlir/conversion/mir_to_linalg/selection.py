"""Lowering of MIR ops. Selection: top-k indices and sampling.

Both ops rank values through one i64 *sort key* per element, built in f32:

    key = (ord(x) << 32) | (N - 1 - i)

where `ord` maps the f32 bit pattern to an i32 whose signed order is the
numeric order (`-0.0` first made `+0.0`, every NaN made `0x7FFFFFFF`, above
`+inf`), and `i` is the position along the last axis.  Keys of one row are
distinct, and the larger key is the larger value, ties to the lower index.
So selection needs only integer max / count reductions, never a sort:

* `rlx.topk`: an scf.for over the k ranks; step j takes, per row, the largest
  key below the key chosen at step j-1 (one linalg.generic reduction, O(N)),
  stores it in column j of a key tensor (tensor.insert_slice), and the keys
  decode to indices at the end: O(k * N), no working copy to update.
* `rlx.sample`: the top-k and top-p cut-offs are per-row key thresholds found
  by bisection over the i64 key range (64 fixed O(V) passes each, counting
  tokens or summing mass at or above the midpoint); the inverse-CDF draw is a
  bisection over the token index (ceil(log2 V) O(V) passes of masked sums).
"""

from __future__ import annotations

from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, math, scf, tensor

from ...dialects import rlx
from ...ir.shapes import DYNAMIC, shape_of
from . import builders as lb

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
KEY_ITERATIONS = 64  # bisection steps over the i64 key range: [I64_MIN, I64_MAX] halves to one key

# SplitMix64 (Vigna): the golden-ratio increment and the finaliser's multipliers.
GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
MASK64 = 2**64 - 1


# --- scalars ------------------------------------------------------------------------------


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def _c64(value: int) -> ir.Value:
    """An i64 constant; `value` taken modulo 2**64 (two's complement)."""
    value &= MASK64
    if value >= 2**63:
        value -= 2**64
    return arith.constant(lb.i64_type(), value)


def _sort_key(x: ir.Value, position: ir.Value, size: int) -> ir.Value:
    """The i64 sort key of the f32 scalar `x` at `position` (i64) of a row of `size`."""
    f32, i32, i64 = lb.f32_type(), _i32(), lb.i64_type()
    zero = arith.constant(f32, 0.0)
    # -0.0 == +0.0 numerically: make both +0.0 so that they tie.
    x = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, x, zero), zero, x)
    bits = arith.bitcast(i32, x)
    flipped = arith.xori(bits, arith.constant(i32, 0x7FFFFFFF))
    negative = arith.cmpi(arith.CmpIPredicate.slt, bits, arith.constant(i32, 0))
    ordered = arith.select(negative, flipped, bits)
    is_nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
    ordered = arith.select(is_nan, arith.constant(i32, 0x7FFFFFFF), ordered)
    high = arith.shli(arith.extsi(i64, ordered), _c64(32))
    low = arith.subi(_c64(size - 1), position)
    return arith.ori(high, low)


def _key_position(key: ir.Value, size: int) -> ir.Value:
    """The position (i64) a sort key was made for."""
    return arith.subi(_c64(size - 1), arith.andi(key, _c64(0xFFFFFFFF)))


def _splitmix64(z: ir.Value) -> ir.Value:
    z = arith.muli(arith.xori(z, arith.shrui(z, _c64(30))), _c64(MIX1))
    z = arith.muli(arith.xori(z, arith.shrui(z, _c64(27))), _c64(MIX2))
    return arith.xori(z, arith.shrui(z, _c64(31)))


def _splitmix64_py(z: int) -> int:
    """The same finaliser on Python ints (for the per-op constant)."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    return z ^ (z >> 31)


# --- tensors ------------------------------------------------------------------------------


def _identity(rank: int) -> ir.AffineMap:
    return ir.AffineMap.get_identity(rank)


def _rows(rank: int) -> ir.AffineMap:
    """Maps (lead..., n) to (lead...): a per-row operand or accumulator."""
    return ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in range(rank - 1)])


def _filled(shape: Sequence[int], value: ir.Value) -> ir.Value:
    return linalg.fill(value, outs=[lb.empty(shape, value.type)])


def _position(dim: int) -> ir.Value:
    """linalg.index of iteration dimension `dim`, as i64."""
    return arith.index_cast(lb.i64_type(), lb.loop_index(dim))


def _sort_keys(x: ir.Value) -> ir.Value:
    """The i64 sort keys of a float tensor `[..., N]` along its last axis."""
    shape = shape_of(x.type)
    rank, size = len(shape), shape[-1]
    return lb.generic(
        [x],
        lb.empty(shape, lb.i64_type()),
        [_identity(rank)] * 2,
        [lb.PARALLEL] * rank,
        lambda v, _: _sort_key(lb.widen(v), _position(rank - 1), size),
    )


def _row_reduce(
    inputs: Sequence[ir.Value], init: ir.Value, body: Callable[..., ir.Value]
) -> ir.Value:
    """Reduces `[..., N]` rows into `init` `[...]`.

    `inputs` are `[..., N]` tensors or per-row `[...]` tensors (told apart by
    rank); `body(*input_elements, accumulator)` returns the new accumulator.
    """
    rank = len(shape_of(inputs[0].type))
    maps = [_identity(rank) if len(shape_of(v.type)) == rank else _rows(rank) for v in inputs]
    return lb.generic(
        inputs, init, [*maps, _rows(rank)], [lb.PARALLEL] * (rank - 1) + [lb.REDUCTION], body
    )


def _row_map(inputs: Sequence[ir.Value], element: ir.Type, body: Callable[..., ir.Value]) -> ir.Value:
    """An elementwise map over same-shape tensors into a new tensor of `element`."""
    shape = shape_of(inputs[0].type)
    return lb.elementwise(inputs, ir.RankedTensorType.get(list(shape), element), body)


def _max_key_below(keys: ir.Value, bound: ir.Value) -> ir.Value:
    """Per row, the largest key strictly below the row's `bound`."""
    lead = shape_of(keys.type)[:-1]
    init = _filled(lead, _c64(I64_MIN))

    def body(key, limit, acc):
        return arith.select(arith.cmpi(arith.CmpIPredicate.slt, key, limit), arith.maxsi(acc, key), acc)

    return _row_reduce([keys, bound], init, body)


def _max_key(keys: ir.Value) -> ir.Value:
    lead = shape_of(keys.type)[:-1]
    return _row_reduce([keys], _filled(lead, _c64(I64_MIN)), lambda key, acc: arith.maxsi(acc, key))


def _for(count: int, iter_args: Sequence[ir.Value], body: Callable[..., Sequence[ir.Value]]) -> list[ir.Value]:
    """`scf.for %i = 0 to count` carrying `iter_args`; `body(i, *args)` returns the yields."""
    loop = scf.ForOp(lb.index_constant(0), lb.index_constant(count), lb.index_constant(1), list(iter_args))
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(list(body(loop.induction_variable, *loop.inner_iter_args)))
    return list(loop.results)


def _carry(new: ir.Value, old: ir.Value) -> ir.Value:
    """`new` copied into the loop-carried `old`.

    One-shot bufferization requires each value an scf.for yields to bufferize
    to its iter_arg's buffer; a value computed into a fresh tensor is copied
    back (O(rows)) so the loop keeps one buffer per carried tensor.
    """
    return linalg.copy(new, outs=[old])


def _narrow_interval(go_up: ir.Value, mid: ir.Value, lo: ir.Value, hi: ir.Value) -> list[ir.Value]:
    """Bisection update, in place on the carried `lo` and `hi`: `lo = mid` where `go_up`, else `hi = mid`."""
    rank = len(shape_of(lo.type))
    maps = [_identity(rank)] * 3
    new_lo = lb.generic([go_up, mid], lo, maps, [lb.PARALLEL] * rank, lambda up, m, old: arith.select(up, m, old))
    new_hi = lb.generic([go_up, mid], hi, maps, [lb.PARALLEL] * rank, lambda up, m, old: arith.select(up, old, m))
    return [new_lo, new_hi]


# --- rlx.topk -----------------------------------------------------------------------------


def _lower_topk(op) -> ir.Value:
    shape = shape_of(op.input.type)
    lead, size, k = list(shape[:-1]), shape[-1], op.k
    rank = len(shape)
    keys = _sort_keys(op.input)
    chosen = lb.empty([*lead, k], lb.i64_type())
    bound = _filled(lead, _c64(I64_MAX))  # no key equals I64_MAX (positions stay below 2**32 - 1)

    def step(j, chosen, bound):
        best = _max_key_below(keys, bound)
        column = tensor.insert_slice(
            best,
            chosen,
            offsets=[j],
            sizes=[],
            strides=[],
            static_offsets=[0] * (rank - 1) + [DYNAMIC],
            static_sizes=[*lead, 1],
            static_strides=[1] * rank,
        )
        return [column, _carry(best, bound)]

    chosen, _ = _for(k, [chosen, bound], step)
    return _row_map([chosen], lb.i64_type(), lambda key: _key_position(key, size))


# --- rlx.sample ---------------------------------------------------------------------------


def _greedy(logits: ir.Value) -> ir.Value:
    """Per row, the position of the largest value (ties low, NaN largest), i64 `[B]`."""
    size = shape_of(logits.type)[-1]
    best = _max_key(_sort_keys(logits))
    return _row_map([best], lb.i64_type(), lambda key: _key_position(key, size))


def _key_threshold(keys: ir.Value, weights: ir.Value | None, needed: ir.Value) -> ir.Value:
    """Per row, the largest key `t` with `F(t) >= needed[b]`, `F(t)` = total weight of the keys >= t.

    `weights` is an f32 `[B, V]` tensor with an f32 `needed`, or None to count
    keys against an i64 `needed`.  `F` does not increase with `t` (a float sum
    of non-negative terms in a fixed order only grows when terms are added),
    and `F(I64_MIN) >= needed` is assumed, so bisection keeps `F(lo) >= needed`
    and `F(hi) < needed` (`F(I64_MAX)` = 0 as no key is that large) and ends,
    after 64 halvings of the i64 range, with `hi = lo + 1`: `lo` is a key.
    """
    batch = shape_of(keys.type)[:-1]
    counting = weights is None
    lo = _filled(batch, _c64(I64_MIN))
    hi = _filled(batch, _c64(I64_MAX))

    def step(_, lo, hi):
        # floor((lo + hi) / 2) without overflow.
        mid = _row_map(
            [lo, hi], lb.i64_type(), lambda a, b: arith.addi(arith.andi(a, b), arith.shrsi(arith.xori(a, b), _c64(1)))
        )

        def add(key, *rest):
            *weight, limit, acc = rest
            at_least = arith.cmpi(arith.CmpIPredicate.sge, key, limit)
            total = arith.addi(acc, _c64(1)) if counting else arith.addf(acc, weight[0])
            return arith.select(at_least, total, acc)

        zero = _c64(0) if counting else lb.f32_constant(0.0)
        inputs = [keys, mid] if counting else [keys, weights, mid]
        mass = _row_reduce(inputs, _filled(batch, zero), add)

        def reaches(f, n):
            if counting:
                return arith.cmpi(arith.CmpIPredicate.sge, f, n)
            return arith.cmpf(arith.CmpFPredicate.OGE, f, n)

        ok = _row_map([mass, needed], ir.IntegerType.get_signless(1), reaches)
        return _narrow_interval(ok, mid, lo, hi)

    lo, _ = _for(KEY_ITERATIONS, [lo, hi], step)
    return lo


def _cut_below(keys: ir.Value, probs: ir.Value, threshold: ir.Value) -> ir.Value:
    """`probs` with the entries whose key is below the row's threshold set to 0."""
    rank = len(shape_of(keys.type))

    def body(key, p, t, _):
        kept = arith.cmpi(arith.CmpIPredicate.sge, key, t)
        return arith.select(kept, p, lb.f32_constant(0.0))

    return lb.generic(
        [keys, probs, threshold],
        lb.empty(shape_of(probs.type), lb.f32_type()),
        [_identity(rank), _identity(rank), _rows(rank), _identity(rank)],
        [lb.PARALLEL] * rank,
        body,
    )


def _mass_through(probs: ir.Value, last: ir.Value) -> ir.Value:
    """Per row, the f32 sum of `probs[b, j]` over `j <= last[b]`, in index order."""
    batch = shape_of(probs.type)[:-1]

    def add(p, limit, acc):
        inside = arith.cmpi(arith.CmpIPredicate.sle, _position(1), limit)
        return arith.select(inside, arith.addf(acc, p), acc)

    return _row_reduce([probs, last], _filled(batch, lb.f32_constant(0.0)), add)


def _uniforms(batch: int, seed: int) -> ir.Value:
    """u[b] in [0, 1): 24 bits of the (b+1)-th SplitMix64 output from state splitmix64(seed + G)."""
    key = _splitmix64_py(seed + GOLDEN)

    def body(_):
        counter = arith.addi(_position(0), _c64(1))
        z = _splitmix64(arith.addi(_c64(key), arith.muli(counter, _c64(GOLDEN))))
        top24 = arith.uitofp(lb.f32_type(), arith.shrui(z, _c64(40)))
        return arith.mulf(top24, lb.f32_constant(2.0**-24))

    return lb.generic([], lb.empty([batch], lb.f32_type()), [_identity(1)], [lb.PARALLEL], body)


def _lower_sample(op) -> ir.Value:
    logits = op.logits
    batch, vocab = shape_of(logits.type)
    temperature, top_k, top_p = op.temperature, op.top_k, op.top_p
    greedy = _greedy(logits)
    if temperature == 0.0:
        return greedy
    f32 = lb.f32_type()

    # p = softmax(logits / temperature), in f32.
    scaled = _row_map(
        [logits], f32, lambda x: arith.divf(lb.widen(x), arith.constant(f32, float(temperature)))
    )
    row_max = _row_reduce(
        [scaled], _filled([batch], arith.constant(f32, float("-inf"))), lambda x, acc: arith.maximumf(acc, x)
    )
    exps = lb.generic(
        [scaled, row_max],
        lb.empty([batch, vocab], f32),
        [_identity(2), _rows(2), _identity(2)],
        [lb.PARALLEL] * 2,
        lambda x, m, _: math.exp(arith.subf(x, m)),
    )
    sums = _row_reduce([exps], _filled([batch], arith.constant(f32, 0.0)), lambda e, acc: arith.addf(acc, e))
    probs = lb.generic(
        [exps, sums],
        lb.empty([batch, vocab], f32),
        [_identity(2), _rows(2), _identity(2)],
        [lb.PARALLEL] * 2,
        lambda e, s, _: arith.divf(e, s),
    )

    keys = _sort_keys(probs) if 0 < top_k < vocab or top_p < 1.0 else None
    if 0 < top_k < vocab:
        # The top_k-th largest key: the largest t with at least top_k keys >= t.
        threshold = _key_threshold(keys, None, _filled([batch], _c64(top_k)))
        probs = _cut_below(keys, probs, threshold)
    if top_p < 1.0:
        # The last key of the nucleus: the largest t whose mass at or above t reaches top_p * total.
        kept = _row_reduce([probs], _filled([batch], arith.constant(f32, 0.0)), lambda p, acc: arith.addf(acc, p))
        needed = _row_map([kept], f32, lambda total: arith.mulf(total, arith.constant(f32, float(top_p))))
        threshold = _key_threshold(keys, probs, needed)
        probs = _cut_below(keys, probs, threshold)

    # Inverse CDF in index order: the smallest i with C_i > u * T.
    total = _mass_through(probs, _filled([batch], _c64(vocab - 1)))
    uniforms = _uniforms(batch, op.seed)

    def target_of(u, t):
        target = arith.mulf(u, t)
        below_t = arith.bitcast(f32, arith.subi(arith.bitcast(_i32(), t), arith.constant(_i32(), 1)))
        return arith.select(arith.cmpf(arith.CmpFPredicate.OLT, target, t), target, below_t)

    targets = _row_map([uniforms, total], f32, target_of)

    def step(_, lo, hi):
        mid = _row_map([lo, hi], lb.i64_type(), lambda a, b: arith.shrsi(arith.addi(a, b), _c64(1)))
        mass = _mass_through(probs, mid)
        # C_mid <= target (or unordered): the draw lies above mid.
        at_most = _row_map(
            [mass, targets], ir.IntegerType.get_signless(1), lambda c, t: arith.cmpf(arith.CmpFPredicate.ULE, c, t)
        )
        return _narrow_interval(at_most, mid, lo, hi)

    steps = (vocab - 1).bit_length()  # halvings of (-1, V-1] down to one index
    _, drawn = _for(steps, [_filled([batch], _c64(-1)), _filled([batch], _c64(vocab - 1))], step)

    return _row_map(
        [total, drawn, greedy],
        lb.i64_type(),
        lambda t, d, g: arith.select(arith.cmpf(arith.CmpFPredicate.ORD, t, t), d, g),
    )


LOWERINGS: dict[type, Callable] = {
    rlx.TopkOp: _lower_topk,
    rlx.SampleOp: _lower_sample,
}
