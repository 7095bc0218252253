"""Training: softmax_cross_entropy, the optimiser updates against numpy transcriptions of
PyTorch's formulas, the Llama gradient against finite differences of the float64 numpy
forward of test_llama, and a training run whose loss goes down."""

from __future__ import annotations

import numpy as np
import pytest
from test_llama import reference_forward

from rlx_mlir import GraphModule
from rlx_mlir.dialects import rlx
from rlx_mlir.frontend.builder import BuildError
from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights
from rlx_mlir.train import SGD, AdamW, TrainStep, softmax_cross_entropy


def _cross_entropy(logits, labels):
    z = logits - logits.max(axis=-1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return -np.mean(np.take_along_axis(log_probs, labels[..., None], axis=-1))


def test_softmax_cross_entropy_value_and_gradient():
    rng = np.random.default_rng(0)
    logits = (3 * rng.standard_normal((2, 3, 7))).astype(np.float32)
    labels = rng.integers(0, 7, (2, 3))
    g = GraphModule.mir("ce")
    x, y = g.input("logits", (2, 3, 7)), g.input("labels", (2, 3), "i64")
    loss = softmax_cross_entropy(g, x, y)
    (dx,) = g.grad(loss, [x])
    g.set_outputs([loss, dx])
    value, grad = g.compile()(logits=logits, labels=labels)
    np.testing.assert_allclose(value, _cross_entropy(logits.astype(np.float64), labels), rtol=1e-5)
    z = logits.astype(np.float64)
    probs = np.exp(z - z.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    onehot = np.eye(7)[labels]
    np.testing.assert_allclose(grad, (probs - onehot) / 6, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", ["i64", "i32"])
def test_softmax_cross_entropy_label_out_of_range_picks_no_class(dtype):
    """A label outside `0 .. C-1` (-1, C, far off) picks no class: the row's loss is logsumexp of
    its logits and its gradient the softmax (the documented rule).  The loss was logsumexp of the
    max-shifted logits and the gradient softmax - onehot(argmax): the label acted as the argmax."""
    logits = np.array([[3.0, 1.0, 0.0], [3.0, 1.0, 0.0], [0.5, 2.0, -1.0], [-4.0, 5.0, 1.0]], np.float32)
    labels = np.array([-1, 0, 3, -(2**31)], np.int64 if dtype == "i64" else np.int32)
    g = GraphModule.mir("ce")
    x, y = g.input("logits", (4, 3)), g.input("labels", (4,), dtype)
    loss = softmax_cross_entropy(g, x, y)
    (dx,) = g.grad(loss, [x])
    g.set_outputs([loss, dx])
    value, grad = g.compile()(logits=logits, labels=labels)
    z = logits.astype(np.float64)
    logsumexp = np.log(np.exp(z).sum(-1))
    picked = np.array([0.0, z[1, 0], 0.0, 0.0])  # only row 1's label is a class
    np.testing.assert_allclose(value, np.mean(logsumexp - picked), rtol=1e-6)
    probs = np.exp(z - logsumexp[:, None])
    onehot = np.zeros((4, 3))
    onehot[1, 0] = 1.0
    np.testing.assert_allclose(grad, (probs - onehot) / 4, rtol=1e-5, atol=1e-7)


def test_softmax_cross_entropy_checks_labels():
    g = GraphModule.mir("ce")
    x, y = g.input("logits", (2, 7)), g.input("labels", (3,), "i64")
    with pytest.raises(BuildError, match=r"labels \[3\] must be logits \[2, 7\] without the class axis"):
        softmax_cross_entropy(g, x, y)


def _regression(features=3, targets=2):
    g = GraphModule.mir("regression")
    x, target = g.input("x", (8, features)), g.input("y", (8, targets))
    w, b = g.param("w", (features, targets)), g.param("b", (targets,))
    err = x @ w + b - target
    g.set_outputs(g.op(rlx.ReduceOp, err * err, kind="mean", axes=[0, 1]))
    return g


def _numpy_regression_grads(x, y, w, b):
    err = x @ w + b - y
    d = 2 * err / err.size
    return x.T @ d, d.sum(0)


@pytest.mark.parametrize("optimizer", [SGD(lr=0.1, momentum=0.9, weight_decay=0.01),
                                       AdamW(lr=0.05, weight_decay=0.1)])
def test_optimiser_steps_match_pytorch_formulas(optimizer):
    _check_optimiser_steps(optimizer, features=3, targets=2)


@pytest.mark.parametrize("optimizer", [SGD(lr=0.1, momentum=0.9, weight_decay=0.01),
                                       AdamW(lr=0.05, weight_decay=0.1)])
def test_optimiser_steps_split_across_threads_match_pytorch_formulas(optimizer):
    """A weight large enough to be split across 2 threads: its update (one loop writing p and the
    states, rlx-fuse-elementwise's stored producers) runs as an scf.forall, in place."""
    # The loss sums 2048 float32 squares of 300-term dot products: 1e-5 is below its rounding.
    _check_optimiser_steps(optimizer, features=300, targets=256, loss_rtol=1e-4, threads=2)


def _check_optimiser_steps(optimizer, features, targets, loss_rtol=1e-5, **compile_options):
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((8, features)), rng.standard_normal((8, targets))
    params = {"w": rng.standard_normal((features, targets)), "b": rng.standard_normal(targets)}
    step = TrainStep(_regression(features, targets), params, optimizer, **compile_options)
    ref = {k: v.astype(np.float64).copy() for k, v in params.items()}
    state = {k: [np.zeros_like(v) for _ in optimizer.state] for k, v in ref.items()}
    for t in range(1, 4):
        loss = step(x=x.astype(np.float32), y=y.astype(np.float32))
        err = x @ ref["w"] + ref["b"] - y
        assert loss == pytest.approx(np.mean(err * err), rel=loss_rtol)
        grads = dict(zip(("w", "b"), _numpy_regression_grads(x, y, ref["w"], ref["b"])))
        for k in ref:  # torch.optim.SGD / AdamW, written out
            p, g_ = ref[k], grads[k]
            if isinstance(optimizer, SGD):
                v = state[k][0] = optimizer.momentum * state[k][0] + g_ + optimizer.weight_decay * p
                ref[k] = p - optimizer.lr * v
            else:
                o = optimizer
                m = state[k][0] = o.beta1 * state[k][0] + (1 - o.beta1) * g_
                v = state[k][1] = o.beta2 * state[k][1] + (1 - o.beta2) * g_ * g_
                m_hat, v_hat = m / (1 - o.beta1**t), v / (1 - o.beta2**t)
                ref[k] = p * (1 - o.lr * o.weight_decay) - o.lr * m_hat / (np.sqrt(v_hat) + o.eps)
        for k in ref:
            np.testing.assert_allclose(step.params[k], ref[k], rtol=1e-4, atol=1e-5, err_msg=f"{k} after step {t}")


SMALL = LlamaConfig(layers=2, hidden=16, heads=2, kv_heads=1, head_dim=8, ffn=32, vocab=11, seq=5, batch=2,
                    rope_theta=10000.0, eps=1e-5)


def _llama_loss(c):
    g = build_llama(c)
    (logits,) = g.reopen()
    labels = g.input("labels", (c.batch, c.seq), "i64")
    g.set_outputs(softmax_cross_entropy(g, logits, labels))
    return g


def test_llama_gradient_of_every_weight_matches_finite_differences():
    """d loss / d w for every weight of a 2-layer Llama, at sampled coordinates, against central
    differences of test_llama's float64 numpy forward."""
    c = SMALL
    rng = np.random.default_rng(5)
    weights = random_weights(c, seed=3)
    tokens = rng.integers(0, c.vocab, (c.batch, c.seq))
    labels = rng.integers(0, c.vocab, (c.batch, c.seq))
    g = _llama_loss(c).lower()
    (loss,) = g.reopen()  # the MIR loss, to differentiate in place
    names = list(weights)
    grads = g.grad(loss, [g.argument(n) for n in names])
    g.set_outputs([loss, *grads])
    out = g.compile()(tokens=tokens, labels=labels, **weights)

    def f(w):
        return _cross_entropy(reference_forward(tokens, w, c), labels)

    base = {k: v.astype(np.float64) for k, v in weights.items()}
    assert out[0] == pytest.approx(f(base), rel=1e-4)
    h = 1e-5
    for name, grad in zip(names, out[1:]):
        assert grad.shape == weights[name].shape
        flat = rng.choice(grad.size, size=min(4, grad.size), replace=False)
        for coordinate in zip(*np.unravel_index(flat, grad.shape)):
            plus, minus = dict(base), dict(base)
            plus[name], minus[name] = base[name].copy(), base[name].copy()
            plus[name][coordinate] += h
            minus[name][coordinate] -= h
            fd = (f(plus) - f(minus)) / (2 * h)
            assert grad[coordinate] == pytest.approx(fd, rel=2e-3, abs=2e-5), f"{name}{coordinate}"


def test_training_a_tiny_llama_lowers_its_loss():
    c = LlamaConfig(layers=1, hidden=16, heads=2, kv_heads=1, head_dim=8, ffn=32, vocab=11, seq=6, batch=4)
    step = TrainStep(_llama_loss(c), random_weights(c, seed=0), AdamW(lr=1e-2, weight_decay=0.0))
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(30):
        tokens = rng.integers(0, c.vocab, (c.batch, c.seq))
        losses.append(step(tokens=tokens, labels=(tokens + 1) % c.vocab))  # predict the next id
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


def test_reopen_and_argument():
    g = GraphModule.mir("f")
    x = g.input("x", (2,))
    g.set_outputs(g.op(rlx.TanhOp, x))
    (y,) = g.reopen()
    g.set_outputs([y, y * y])
    out = g.compile()(x=np.array([0.5, -1.0], np.float32))
    np.testing.assert_allclose(out[1], np.tanh([0.5, -1.0]) ** 2, rtol=1e-6)
    assert g.argument("x").shape == (2,)
    with pytest.raises(BuildError, match=r"'f' has no argument named 'w' \(arguments: x\)"):
        g.argument("w")
    open_module = GraphModule.mir("g")
    with pytest.raises(BuildError, match="has no outputs yet: call set_outputs before reopen"):
        open_module.reopen()


def test_train_step_rejects_unknown_wrt():
    with pytest.raises(BuildError, match=r"wrt \['nope'\] are not arguments of 'regression'"):
        TrainStep(_regression(), {}, SGD(), wrt=["nope"])


def test_train_step_updates_parameters_in_place():
    """The new parameters and optimiser states are tied results (`rlx.tied`): the compiled step
    writes the very arrays of `step.params` / `step.state` and returns them, allocating none."""
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((8, 3)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32)
    step = TrainStep(_regression(), {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}, AdamW(lr=0.05))
    text = str(step.module)
    assert text.count("rlx.tied") == 2 + 2 * 2  # w, b, and m and v of each
    arrays = {**step.params, **step.state}
    before = {k: v.copy() for k, v in arrays.items()}
    out = step.executable(x=x, y=y, **step.params, **step.state, step=np.float32(1))
    expected = [step.params["w"], step.params["b"], step.state["m.w"], step.state["v.w"], step.state["m.b"], step.state["v.b"]]
    assert all(result is array for result, array in zip(out[1:], expected))  # the caller's arrays, updated
    assert all(not np.array_equal(arrays[k], before[k]) for k in arrays)
    loss = step(x=x, y=y)
    assert all(step.params[k] is arrays[k] for k in step.params) and np.isfinite(loss)


def test_train_step_multiplies_by_each_weight_not_their_concatenation():
    """SwiGLU's gate and up weights are multiplied as one concatenation in the forward; the
    training step splits that product per weight before differentiating it (no weight copied
    into a concatenation, no gradient copied out of one), and its update is still `-lr` times
    the gradient `GraphModule.grad` gives the unsplit forward."""
    c = SMALL
    rng = np.random.default_rng(7)
    weights = random_weights(c, seed=1)
    tokens = rng.integers(0, c.vocab, (c.batch, c.seq))
    labels = rng.integers(0, c.vocab, (c.batch, c.seq))
    forward = _llama_loss(c).lower()
    concats = [op for op in forward.module.body.operations[0].regions[0].blocks[0].operations
               if isinstance(op, rlx.ConcatOp)]
    assert concats, "the forward no longer concatenates weights: this test checks nothing"

    lr = 0.5
    step = TrainStep(_llama_loss(c), weights, SGD(lr=lr, momentum=0.0))
    train_step = next(op for op in step.module.body.operations if op.sym_name.value == "train_step")
    arguments = list(train_step.regions[0].blocks[0].arguments)
    for op in train_step.regions[0].blocks[0].operations:
        if isinstance(op, rlx.ConcatOp):
            assert not any(operand in arguments for operand in op.operands), f"weights concatenated: {op}"
    step(tokens=tokens, labels=labels)

    (loss,) = forward.reopen()
    names = list(weights)
    grads = forward.grad(loss, [forward.argument(n) for n in names])
    forward.set_outputs([loss, *grads])
    out = forward.compile()(tokens=tokens, labels=labels, **weights)
    for name, grad in zip(names, out[1:]):
        np.testing.assert_allclose(step.params[name], weights[name] - lr * grad, rtol=1e-5, atol=1e-6, err_msg=name)
