"""Runs the models of a GPU bundle (scripts/gpu_bundle.py) against numpy, and times them.

Needs only Python 3, numpy and the bundle (no MLIR; the bundle carries the MLIR-free part of rlx_mlir):

    python check.py                 # numerics of every CUDA model vs numpy; exit status 1 on a mismatch
    python check.py --bench         # then time the benchmark models (and PyTorch, where installed)
    python check.py --cpu           # the same numerics with the bundle's CPU builds (any machine)

Each numerics model runs twice: through the Python loader, and through the C runtime (`c/run_model`,
examples/c/run_model.c built by gpu_bundle.py where it found a C compiler).

Each model is `<name>.so` + `<name>.json` (its manifest) under `cuda/` or `cpu/`;
`models.json` says, per model, how to make its inputs and which numpy reference
it must match.  References are written here in plain numpy (float64).
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# In a bundle, its own MLIR-free copy of rlx_mlir; run from the source tree (benchmarks/gpu.py imports
# this module), the installed package.
sys.path.insert(0, HERE)
from rlx_mlir.aot import loader  # noqa: E402

# --- numpy references ----------------------------------------------------------------------


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def rms_norm(x, gain, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gain


def attention(q, k, v, heads, head_dim, causal):
    b, sq, _ = q.shape
    sk = k.shape[1]
    group = heads // (k.shape[2] // head_dim)
    out = np.zeros((b, sq, heads * head_dim))
    visible = np.tril(np.ones((sq, sk), bool), k=sk - sq) if causal else np.ones((sq, sk), bool)
    for h in range(heads):
        g = h // group
        qh, kh, vh = (t[:, :, i * head_dim:(i + 1) * head_dim] for t, i in ((q, h), (k, g), (v, g)))
        scores = np.where(visible, qh @ kh.transpose(0, 2, 1) / math.sqrt(head_dim), -np.inf)
        out[:, :, h * head_dim:(h + 1) * head_dim] = softmax(scores) @ vh
    return out


def rope(x, theta):
    seq, _, hd = x.shape
    half = hd // 2
    angles = np.arange(seq)[:, None] * theta ** (-np.arange(0, hd, 2) / hd)[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    first, second = x[..., :half], x[..., half:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def llama(inputs, c):
    w = {k: v.astype(np.float64) for k, v in inputs.items()}
    logits = []
    for row in inputs["tokens"]:
        x, seq = w["embed"][row], len(row)
        causal = np.tril(np.ones((seq, seq), bool))
        for i in range(c["layers"]):
            p = f"layers.{i}."
            n1 = rms_norm(x, w[p + "ln1"], c["eps"])
            q = rope((n1 @ w[p + "q"]).reshape(seq, c["heads"], c["head_dim"]), c["rope_theta"])
            k = rope((n1 @ w[p + "k"]).reshape(seq, c["kv_heads"], c["head_dim"]), c["rope_theta"])
            v = (n1 @ w[p + "v"]).reshape(seq, c["kv_heads"], c["head_dim"])
            group = c["heads"] // c["kv_heads"]
            heads = []
            for h in range(c["heads"]):
                scores = np.where(causal, q[:, h] @ k[:, h // group].T / np.sqrt(c["head_dim"]), -np.inf)
                heads.append(softmax(scores) @ v[:, h // group])
            x = x + np.concatenate(heads, axis=-1) @ w[p + "o"]
            n2 = rms_norm(x, w[p + "ln2"], c["eps"])
            gate = n2 @ w[p + "gate"]
            x = x + (gate / (1 + np.exp(-gate)) * (n2 @ w[p + "up"])) @ w[p + "down"]
        logits.append(rms_norm(x, w["norm"], c["eps"]) @ w["lm_head"])
    return np.stack(logits)


REFERENCES = {
    "add": lambda i, a: i["x"] + i["b"],
    "gelu": lambda i, a: gelu(i["x"]),
    "matmul": lambda i, a: i["a"] @ i["b"],
    "softmax": lambda i, a: softmax(i["x"]),
    "rms_norm": lambda i, a: rms_norm(i["x"], i["g"], a["eps"]) + i["beta"],
    "attention": lambda i, a: attention(i["q"], i["k"], i["v"], a["heads"], a["head_dim"], a["causal"]),
    "llama": lambda i, a: llama(i, a),
}


def make_inputs(function, seed, vocab=None):
    rng = np.random.default_rng(seed)
    inputs = {}
    for spec in function.inputs:
        if spec.dtype.kind == "i":
            inputs[spec.name] = rng.integers(0, vocab or 2, spec.shape).astype(spec.dtype)
        elif spec.is_param and len(spec.shape) == 1:
            inputs[spec.name] = (1.0 + 0.1 * rng.standard_normal(spec.shape)).astype(spec.dtype)
        elif spec.is_param:
            inputs[spec.name] = (rng.standard_normal(spec.shape) / math.sqrt(spec.shape[0])).astype(spec.dtype)
        else:
            inputs[spec.name] = rng.standard_normal(spec.shape).astype(spec.dtype)
    return inputs


# --- running -------------------------------------------------------------------------------


def unpack_llvm(target_dir):
    """Decompresses libLLVM.so.xz next to libmlir_cuda_runtime.so (which loads it) once."""
    packed, unpacked = os.path.join(HERE, "libLLVM.so.xz"), os.path.join(target_dir, "libLLVM.so")
    if os.path.exists(packed) and not os.path.exists(unpacked):
        with lzma.open(packed) as source, open(unpacked + ".part", "wb") as target:
            shutil.copyfileobj(source, target, 1 << 24)
        os.replace(unpacked + ".part", unpacked)


def expected_output(info, inputs):
    return REFERENCES[info["reference"]]({k: v.astype(np.float64) if v.dtype.kind == "f" else v
                                          for k, v in inputs.items()}, info["args"])


def report(kind, via, name, out, expected, info, extra=""):
    """Prints the PASS/FAIL line of one model's output against its reference; True when it passes."""
    error = float(np.max(np.abs(out.astype(np.float64) - expected)))
    scale = float(np.max(np.abs(expected))) or 1.0
    ok = np.allclose(out.astype(np.float64), expected, rtol=info["rtol"], atol=info["atol"] * scale)
    print(f"{'PASS' if ok else 'FAIL'}  {kind:4}  {via:6}  {name:24} max |error| {error:.3g} (scale {scale:.3g}){extra}")
    return ok


def check_numerics(models, kind):
    """Every numerics model through the Python loader; the number of failures."""
    failures = 0
    for name, info in models["numerics"].items():
        model = loader.load(os.path.join(HERE, kind, name + ".so"))
        function = next(iter(model.functions.values()))
        inputs = make_inputs(function, info["seed"], info["args"].get("vocab"))
        failures += not report(kind, "python", name, function(**inputs), expected_output(info, inputs), info)
    return failures


def check_c_runtime(models, kind, repeat):
    """Every numerics model through the C runtime (`c/run_model`, examples/c/run_model.c: a context per
    model, weights bound once, inputs from files); the number of failures.  Prints one line per model
    with the C program's time per call (host arrays in and out, copies to and from the device included)."""
    runner = os.path.join(HERE, "c", "run_model")
    if not os.path.exists(runner):
        print("(this bundle has no c/run_model: the C runtime is not checked)")
        return 0
    directory = os.path.join(HERE, kind)
    env = {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(filter(None, [directory, os.environ.get("LD_LIBRARY_PATH")]))}
    failures = 0
    for name, info in models["numerics"].items():
        with open(os.path.join(directory, name + ".json")) as f:
            entry = json.load(f)["functions"][0]
        specs = SimpleNamespace(inputs=[loader.Spec(e) for e in entry["inputs"]])
        outputs = [loader.Spec(e) for e in entry["outputs"]]
        inputs = make_inputs(specs, info["seed"], info["args"].get("vocab"))
        with tempfile.TemporaryDirectory() as work:
            for spec in specs.inputs:
                np.ascontiguousarray(inputs[spec.name], spec.dtype).tofile(os.path.join(work, spec.name + ".bin"))
            try:
                done = subprocess.run([runner, os.path.join(directory, name + ".so"), work, str(repeat)],
                                      capture_output=True, text=True, env=env, timeout=300)
                problem = f"exit {done.returncode}: {done.stderr.strip()}" if done.returncode != 0 else None
            except subprocess.TimeoutExpired:
                problem = "no answer in 300 s"
            if problem:
                failures += 1
                print(f"FAIL  {kind:4}  {'C':6}  {name:24} {problem}")
                continue
            out = np.fromfile(os.path.join(work, outputs[0].name + ".out.bin"), outputs[0].dtype)
        timing = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        failures += not report(kind, "C", name, out.reshape(outputs[0].shape), expected_output(info, inputs), info,
                               f"; {timing}")
    return failures


def bench(models, repeat):
    try:
        import torch

        has_torch = torch.cuda.is_available()
    except ImportError:
        torch, has_torch = None, False
    print(f"\n{'benchmark':34} {'rlx ms':>10} {'torch ms':>10} {'rlx/torch':>10}")
    for name, info in models["bench"].items():
        model = loader.load(os.path.join(HERE, "cuda", name + ".so"))
        function = next(iter(model.functions.values()))
        inputs = make_inputs(function, 0, info["args"].get("vocab"))
        rlx_ms = 1e3 * float(np.median(function.time_on_device(**inputs, repeat=repeat)))
        torch_ms = torch_time(torch, info, inputs, repeat) if has_torch else None
        ratio = f"{torch_ms / rlx_ms:9.2f}x" if torch_ms else "-"
        torch_text = f"{torch_ms:10.3f}" if torch_ms else "         -"
        print(f"{name:34} {rlx_ms:10.3f} {torch_text} {ratio:>10}")
    if not has_torch:
        print("(PyTorch with CUDA not found: rlx times only)")


def torch_time(torch, info, inputs, repeat):
    """PyTorch's time for the same computation on device-resident tensors (TF32 off)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    t = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
    a = info["args"]
    kind = info["reference"]
    if kind == "matmul":
        run = lambda: t["a"] @ t["b"]  # noqa: E731
    elif kind == "softmax":
        run = lambda: torch.softmax(t["x"], dim=-1)  # noqa: E731
    elif kind == "attention":
        b, s, _ = t["q"].shape
        d = a["head_dim"]
        q, k, v = (t[n].view(b, s, -1, d).transpose(1, 2) for n in ("q", "k", "v"))
        run = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=a["causal"])  # noqa: E731
    else:
        return None  # no PyTorch model of the whole network here
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="check the CPU builds (no GPU needed)")
    parser.add_argument("--bench", action="store_true", help="also time the benchmark models")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    with open(os.path.join(HERE, "models.json")) as f:
        models = json.load(f)
    if args.cpu:
        return 1 if check_numerics(models, "cpu") + check_c_runtime(models, "cpu", args.repeat) else 0
    problem = loader.cuda_device_error()
    if problem:
        print(f"cannot run the CUDA models here: {problem} (python check.py --cpu checks the CPU builds)")
        return 2
    unpack_llvm(os.path.join(HERE, "cuda"))
    failures = check_numerics(models, "cuda") + check_c_runtime(models, "cuda", args.repeat)
    if args.bench:
        bench(models, args.repeat)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
