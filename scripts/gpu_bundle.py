"""Builds the deployment bundle for a GPU machine (docs/design.md §5), on any machine with rlx_mlir.

    python scripts/gpu_bundle.py                     # -> bundle/gpu (git-ignored), sm_90 / PTX 8.0
    python scripts/gpu_bundle.py --chip sm_80 --features +ptx70 --out /tmp/b
    python scripts/gpu_bundle.py --no-bench --no-llvm   # numerics models only, no libLLVM (fast; for tests)

The bundle holds, with no MLIR needed on the target (Python 3 + numpy + a CUDA driver):
- `cuda/<model>.so` + `.json`: AOT shared objects (host code, kernels' PTX embedded) and manifests;
  `cuda/libmlir_cuda_runtime.so` (MLIR's CUDA runtime wrappers, which the models link);
- `libLLVM.so.xz`: the libLLVM that runtime library needs, xz-compressed (check.py unpacks it into cuda/);
- `cpu/<model>.so` + `.json`: the numerics models built for the CPU, to check the bundle anywhere;
- `rlx_mlir/`: the MLIR-free part of the package that `rlx_mlir.aot.loader` imports (`loader_files`);
- `c/run_model`: examples/c/run_model.c linked with the C runtime (rlx_mlir/native), where this machine
  has a C compiler: `check.py` runs every numerics model through it too (the C API, `rlx_context_*`);
- `check.py` (scripts/gpu_check.py), `models.json`.

Numerics models: elementwise, matmul (f32 ragged, f16), softmax, RMS norm, causal GQA attention (f32, f16)
and the 2-layer Llama-style model.  Benchmark models (CUDA only): f32 and f16 matmul 4096^3 (operands as
weights, kept on the device), softmax 8192 x 8192, attention in f32 and f16 (batch 8, 16 heads, seq 1024,
head_dim 64) and a 12-layer Llama-style model.  The whole bundle must stay under 64 MiB; the script fails otherwise.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 64 * 1024 * 1024

# Python source that makes every import of `mlir` fail: what a machine without MLIR sees.
BLOCK_MLIR = """
import sys


class BlockMLIR:
    def find_spec(self, name, path=None, target=None):
        if name == "mlir" or name.startswith("mlir."):
            raise ImportError(f"MLIR is not available here (importing {name!r})")
        return None


sys.meta_path.insert(0, BlockMLIR())
"""

_LIST_LOADER_MODULES = BLOCK_MLIR + """
sys.path.insert(0, sys.argv[1])
import rlx_mlir.aot.loader
for name, module in sorted(sys.modules.items()):
    if name == "rlx_mlir" or name.startswith("rlx_mlir."):
        print(module.__file__)
"""


def loader_files(root: Path = ROOT) -> list[Path]:
    """The files of `rlx_mlir` (relative to `root`) that importing `rlx_mlir.aot.loader` loads, found by
    importing it in a child Python where MLIR cannot be imported: what a bundle must carry to load models.

    RuntimeError when the loader cannot be imported without MLIR."""
    done = subprocess.run([sys.executable, "-c", _LIST_LOADER_MODULES, str(root)], capture_output=True, text=True,
                          cwd=root)
    if done.returncode != 0:
        raise RuntimeError(f"rlx_mlir.aot.loader does not import without MLIR:\n{done.stderr}")
    files = [Path(line).resolve() for line in done.stdout.splitlines()]
    outside = [str(f) for f in files if not f.is_relative_to(root.resolve())]
    if outside:
        raise RuntimeError(f"rlx_mlir.aot.loader was imported from outside {root}: {', '.join(outside)}")
    return [f.relative_to(root.resolve()) for f in files]


def one_op(op, operands, result, attrs="", names=None, params=()):
    names = names or [f"a{i}" for i in range(len(operands))]
    params_text = ", ".join(
        f"%{n}: {t} {{rlx.name = \"{n}\"{', rlx.param' if n in params else ''}}}" for n, t in zip(names, operands)
    )
    args = ", ".join(f"%{n}" for n in names)
    attr_text = f" {{{attrs}}}" if attrs else ""
    return (f"func.func @{op}({params_text}) -> {result} {{\n"
            f'  %0 = "rlx.{op}"({args}){attr_text} : ({", ".join(operands)}) -> {result}\n'
            f"  return %0 : {result}\n}}\n")


def llama_text(config):
    from rlx_mlir.models.llama import LlamaConfig, build_llama

    return str(build_llama(LlamaConfig(**config)))


LLAMA2 = dict(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=97, seq=7,
              rope_theta=10000.0, eps=1e-5)
LLAMA12 = dict(layers=12, hidden=768, heads=12, kv_heads=4, head_dim=64, ffn=2048, vocab=32000, seq=128,
               rope_theta=10000.0, eps=1e-5)


def attention_op(b, s, heads, kv_heads, d, dtype="f32", params=()):
    q, kv = f"tensor<{b}x{s}x{heads * d}x{dtype}>", f"tensor<{b}x{s}x{kv_heads * d}x{dtype}>"
    return one_op("attention", [q, kv, kv], q, f'head_dim = {d} : i64, mask_kind = "causal", num_heads = {heads} : i64',
                  names=["q", "k", "v"], params=params)


def numerics_models():
    """name -> (MLIR text, models.json entry)."""
    tol = {"rtol": 1e-4, "atol": 1e-5}
    return {
        "add_broadcast": (one_op("add", ["tensor<64x300xf32>", "tensor<300xf32>"], "tensor<64x300xf32>",
                                 names=["x", "b"]), {"reference": "add", "args": {}, **tol}),
        "gelu": (one_op("gelu", ["tensor<4096xf32>"], "tensor<4096xf32>", names=["x"]),
                 {"reference": "gelu", "args": {}, **tol}),
        "matmul_ragged": (one_op("matmul", ["tensor<50x72xf32>", "tensor<72x40xf32>"], "tensor<50x40xf32>",
                                 names=["a", "b"]), {"reference": "matmul", "args": {}, **tol}),
        "matmul_f16": (one_op("matmul", ["tensor<64x96xf16>", "tensor<96x48xf16>"], "tensor<64x48xf16>",
                              names=["a", "b"]), {"reference": "matmul", "args": {}, "rtol": 2e-3, "atol": 2e-3}),
        "softmax": (one_op("softmax", ["tensor<8x1000xf32>"], "tensor<8x1000xf32>", "axis = -1 : i64", names=["x"]),
                    {"reference": "softmax", "args": {}, **tol}),
        "rms_norm": (one_op("rms_norm", ["tensor<6x96xf32>", "tensor<96xf32>", "tensor<96xf32>"], "tensor<6x96xf32>",
                            "axis = -1 : i64, eps = 1.0e-5 : f32", names=["x", "g", "beta"]),
                     {"reference": "rms_norm", "args": {"eps": 1e-5}, **tol}),
        "attention_gqa": (attention_op(2, 9, 4, 2, 16),
                          {"reference": "attention", "args": {"heads": 4, "head_dim": 16, "causal": True}, **tol}),
        "attention_gqa_f16": (attention_op(2, 40, 4, 2, 16, dtype="f16"),
                              {"reference": "attention", "args": {"heads": 4, "head_dim": 16, "causal": True},
                               "rtol": 5e-3, "atol": 5e-3}),
        "llama2": (llama_text(LLAMA2), {"reference": "llama", "args": LLAMA2, "rtol": 1e-4, "atol": 1e-4}),
    }


def bench_models():
    n = 4096
    return {
        "matmul_f32_4096": (one_op("matmul", [f"tensor<{n}x{n}xf32>"] * 2, f"tensor<{n}x{n}xf32>", names=["a", "b"],
                                   params=("a", "b")), {"reference": "matmul", "args": {}}),
        "matmul_f16_4096": (one_op("matmul", [f"tensor<{n}x{n}xf16>"] * 2, f"tensor<{n}x{n}xf16>", names=["a", "b"],
                                   params=("a", "b")), {"reference": "matmul", "args": {}}),
        "softmax_8192": (one_op("softmax", ["tensor<8192x8192xf32>"], "tensor<8192x8192xf32>", "axis = -1 : i64",
                                names=["x"], params=("x",)), {"reference": "softmax", "args": {}}),
        "attention_b8_h16_s1024_d64": (attention_op(8, 1024, 16, 16, 64, params=("q", "k", "v")),
                                       {"reference": "attention",
                                        "args": {"heads": 16, "head_dim": 64, "causal": True}}),
        "attention_f16_b8_h16_s1024_d64": (attention_op(8, 1024, 16, 16, 64, dtype="f16", params=("q", "k", "v")),
                                           {"reference": "attention",
                                            "args": {"heads": 16, "head_dim": 64, "causal": True}}),
        "llama12": (llama_text(LLAMA12), {"reference": "llama", "args": LLAMA12}),
    }


def compress_llvm(destination: Path) -> None:
    """libLLVM.so as xz (cached: redone only when the source changes)."""
    from mlir import ir

    source = Path(ir.__file__).resolve().parent.parent / "llvm" / "lib" / "libLLVM.so"
    stamp = destination.with_suffix(".stamp")
    key = f"{source} {source.stat().st_size} {source.stat().st_mtime_ns}"
    if destination.exists() and stamp.exists() and stamp.read_text() == key:
        return
    if shutil.which("xz"):
        with open(destination, "wb") as out:
            subprocess.run(["xz", "-9", "-T0", "-c", str(source)], stdout=out, check=True)
    else:
        with open(source, "rb") as raw, lzma.open(destination, "wb", preset=9) as packed:
            shutil.copyfileobj(raw, packed, 1 << 24)
    stamp.write_text(key)


def build_c_runner(out: Path) -> bool:
    """c/run_model: the C example that runs any exported model from files, with the C runtime compiled in
    (it loads the CUDA driver itself, with dlopen).  False (and a line) without a C compiler."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        print("no C compiler (cc or gcc): the bundle has no C runtime check")
        return False
    native = ROOT / "rlx_mlir" / "native"
    (out / "c").mkdir(parents=True, exist_ok=True)
    subprocess.run([compiler, "-std=c11", "-O2", f"-I{native / 'include'}", str(ROOT / "examples" / "c" / "run_model.c"),
                    str(native / "src" / "runtime.c"), "-o", str(out / "c" / "run_model"), "-ldl", "-lpthread", "-lm"],
                   check=True)
    return True


def build(out: Path, chip: str, features: str, bench: bool, llvm: bool) -> int:
    from rlx_mlir import aot

    out.mkdir(parents=True, exist_ok=True)
    models = {"numerics": {}, "bench": {}, "gpu": {"chip": chip, "features": features}}
    for seed, (name, (text, info)) in enumerate(numerics_models().items()):
        aot.export(text, out / "cpu" / f"{name}.so", target="cpu")
        aot.export(text, out / "cuda" / f"{name}.so", target="cuda", chip=chip, features=features)
        models["numerics"][name] = {**info, "seed": seed}
    if bench:
        for name, (text, info) in bench_models().items():
            aot.export(text, out / "cuda" / f"{name}.so", target="cuda", chip=chip, features=features)
            models["bench"][name] = info
    shutil.rmtree(out / "rlx_mlir", ignore_errors=True)  # no stale module from an earlier build
    for file in loader_files():
        (out / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / file, out / file)
    shutil.rmtree(out / "c", ignore_errors=True)
    build_c_runner(out)
    shutil.copy2(ROOT / "scripts" / "gpu_check.py", out / "check.py")
    (out / "models.json").write_text(json.dumps(models, indent=2) + "\n")
    if llvm:
        compress_llvm(out / "libLLVM.so.xz")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file() and f.suffix != ".stamp")
    print(f"bundle {out}: {size / 2**20:.1f} MiB")
    if size >= LIMIT:
        print(f"error: the bundle is {size / 2**20:.1f} MiB, over the 64 MiB limit", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build the GPU deployment bundle (docs/design.md §5).")
    parser.add_argument("--out", type=Path, default=ROOT / "bundle" / "gpu")
    parser.add_argument("--chip", default="sm_90")
    parser.add_argument("--features", default="+ptx80")
    parser.add_argument("--no-bench", action="store_true", help="leave out the benchmark models")
    parser.add_argument("--no-llvm", action="store_true", help="leave out libLLVM.so.xz (the CUDA models need it)")
    args = parser.parse_args(argv)
    from rlx_mlir.targets.cuda import TargetError, check_target

    try:
        check_target(args.chip, args.features)
    except TargetError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    status = build(args.out, args.chip, args.features, not args.no_bench, not args.no_llvm)
    print(f"built in {time.perf_counter() - start:.1f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
