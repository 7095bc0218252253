"""`TrainStep`: forward, backward and optimiser update of a model in one compiled function.

    g = GraphModule.hir("lm")                    # any model whose one output is the loss
    ... loss = softmax_cross_entropy(g, logits, labels); g.set_outputs(loss)
    step = TrainStep(g, weights, AdamW(lr=1e-3))
    for batch in batches:
        loss = step(tokens=..., labels=...)      # step.params now holds the updated weights

The model is lowered to MIR; `rlx-grad`'s transformation (`transforms.mir.grad.differentiate`)
adds `@train_step` with the model's arguments, the gradients of the trainable ones (`wrt`,
default every `rlx.param`), and this function gets one more argument per optimiser state
per parameter (`m.<name>`, `v.<name>`, ...) and the rank-0 f32 `step`, and returns
`[loss, new params..., new states...]`: the update is built after the backward ops, so
forward activations, gradients and updates are planned together by LIR in one arena.
Each new parameter and state is tied to its argument (`rlx.tied`, as a KV cache after
`rlx.kv_cache_write`): rlx-lir-to-linalg materializes it into the argument's buffer, so the
update writes the caller's arrays in place (every read of a parameter, forward and backward,
comes before its update in the schedule; rlx-drop-tied-results checks that bufferization
needed no copy) and the step allocates no parameter or state array.  `params` and `state`
hold those arrays, so callers that keep references see them change.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import func

from ..driver import Compilation
from ..frontend.builder import BuildError, GraphModule
from ..ir.attrs import NAME_ATTR, TIED_ATTR
from ..ir.walk import collect_ops
from ..runtime.compiler import compile as jit_compile
from ..runtime.freed_memory import keep_freed_memory
from ..transforms.autodiff import GradError
from ..transforms.autodiff.emit import Emitter
from ..transforms.mir.grad import argument_names, differentiate, parameter_positions
from ..transforms.mir.split_weight_concat import SplitWeightConcat

ENTRY = "train_step"


def build_train_function(model: GraphModule, optimizer, wrt: Optional[Sequence[str]] = None):
    """Adds `@train_step` to `model`'s module (lowered to MIR first); returns (function, wrt names).

    The forward's products by concatenated weights (SwiGLU's gate and up) are split into one
    product per weight first (`rlx-split-weight-concat`, which the compile pipeline runs on the
    forward alone too): differentiated as they are, the step would copy the weights into their
    concatenation and copy the gradient of the concatenation back out into one gradient per
    weight, weight-sized copies on every step (with the concatenation also read by the
    backward, the pipeline can no longer split it)."""
    model.lower()
    with Compilation(model.context) as job:
        job.run(model.module, [SplitWeightConcat()], "splitting the weight concatenations failed")
    function = next(f for f in collect_ops(model.module.operation, func.FuncOp) if f.sym_name.value == model.name)
    names = argument_names(function)
    if wrt is None:
        positions = parameter_positions(function)
    else:
        missing = [n for n in wrt if n not in names]
        if missing:
            raise BuildError(f"train step: wrt {missing} are not arguments of '{model.name}' (arguments: {', '.join(names)})")
        positions = [names.index(n) for n in wrt]
    if not positions:
        raise BuildError(f"train step: '{model.name}' has no parameter to train")
    with model.context, ir.Location.unknown():
        try:
            step_function = differentiate(function, positions, ENTRY)
        except GradError as error:
            where = f"{error.op.location}: " if error.op is not None else ""
            raise BuildError(f"{where}{error.message}") from None
        _add_update(step_function, function, positions, names, optimizer)
    return step_function, [names[i] for i in positions]


def _add_update(step_function, forward, positions, names, optimizer) -> None:
    block = step_function.regions[0].blocks[0]
    arguments = list(block.arguments)
    arg_attrs = list(step_function.arg_attrs) if "arg_attrs" in step_function.attributes else [ir.DictAttr.get({})] * len(arguments)
    states = []  # per trained parameter, its state arguments
    for position in positions:
        param = arguments[position]
        per_param = []
        for state in optimizer.state:
            per_param.append(block.add_argument(param.type, ir.Location.unknown()))
            arg_attrs.append(ir.DictAttr.get({NAME_ATTR: ir.StringAttr.get(f"{state}.{names[position]}")}))
        states.append(per_param)
    f32 = ir.F32Type.get()
    step = block.add_argument(ir.RankedTensorType.get([], f32), ir.Location.unknown())
    arg_attrs.append(ir.DictAttr.get({NAME_ATTR: ir.StringAttr.get("step")}))

    ret = list(block.operations)[-1]
    loss, *grads = list(ret.operands)
    emit = Emitter(ir.InsertionPoint(ret), ir.Location.name("optimizer"))
    new_params, new_states = [], []
    shared = optimizer.prepare(emit, step)
    for position, grad, state in zip(positions, grads, states):
        updated, updated_state = optimizer.update(emit, shared, arguments[position], grad, state)
        new_params.append(updated)
        new_states.extend(updated_state)
    results = [loss, *new_params, *new_states]
    func.ReturnOp(results, ip=ir.InsertionPoint(ret))
    ret.erase()
    step_function.attributes["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)
    # Each new parameter and state is its argument updated in place (as a KV cache is).
    i64 = ir.IntegerType.get_signless(64)
    tied_to = [*positions, *(s.arg_number for per_param in states for s in per_param)]
    step_function.attributes["res_attrs"] = ir.ArrayAttr.get(
        [ir.DictAttr.get({})] + [ir.DictAttr.get({TIED_ATTR: ir.IntegerAttr.get(i64, a)}) for a in tied_to])
    inputs = [a.type for a in block.arguments]
    step_function.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [r.type for r in results]))


class TrainStep:
    """A compiled training step of `model` (one output: the loss) with `optimizer` (SGD, AdamW).

    `params` maps each trained parameter's name to its initial array (copied, float32);
    `params` and `state` hold the current values, updated by every call.
    """

    def __init__(self, model: GraphModule, params: Mapping[str, np.ndarray], optimizer,
                 wrt: Optional[Sequence[str]] = None, **compile_options):
        self.function, self.trained = build_train_function(model, optimizer, wrt)
        missing = [n for n in self.trained if n not in params]
        if missing:
            raise BuildError(f"train step: no initial value for {missing}")
        self.optimizer = optimizer
        self.params = {n: np.array(a, dtype=np.float32) for n, a in params.items()}
        self.state = {
            f"{s}.{n}": np.zeros(self.params[n].shape, np.float32) for n in self.trained for s in optimizer.state
        }
        self.steps = 0
        with model.context, ir.Location.unknown():  # only the step is compiled, not the forward
            module = ir.Module.create()
            self.function = self.function.operation.clone(ip=ir.InsertionPoint(module.body)).opview
        with Compilation(model.context) as job:  # one constant per value, no dead ops
            job.run(module, "builtin.module(rlx-cse,rlx-dce)", "cleaning up the training step failed")
        self.module = module
        self.executable = jit_compile(module, entry=ENTRY, **compile_options)
        keep_freed_memory()

    def __call__(self, **batch) -> float:
        """Runs one step on `batch` (the model's non-trained inputs by name); returns the loss.
        The compiled step writes the new parameters and states into the arrays of `params` and
        `state` (tied arguments): nothing is copied back, no parameter array is allocated."""
        self.steps += 1
        out = self.executable(**batch, **self.params, **self.state, step=np.float32(self.steps))
        return float(out[0])


__all__ = ["ENTRY", "TrainStep", "build_train_function", "keep_freed_memory"]
