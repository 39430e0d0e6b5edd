"""Write XLA:TPU's per-pass HLO dumps of four small JAX programs into ``tests/data/pass_dumps``.

The dumps are what ``layout_algebra.hlo.validate_passes`` (and ``layout-algebra
validate-passes``) check: XLA prints the module after every pass that changed it, and the
validator proves, refutes or leaves unknown each consecutive pair.

Run it with a Python that has ``jax[tpu]`` installed (libtpu compiles for a TPU topology
on a CPU-only machine; no TPU is needed)::

    python3 -m venv /tmp/tpu-venv && /tmp/tpu-venv/bin/pip install 'jax[tpu]==0.10.2'
    python3 scripts/generate_pass_dumps.py --python /tmp/tpu-venv/bin/python
    # or: JAX_TPU_PYTHON=/tmp/tpu-venv/bin/python python3 scripts/generate_pass_dumps.py

Each program is compiled in its own child process (one libtpu process at a time) with
``XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*``. Only the numbered per-pass files
of the program's main module are kept (plus ``before_optimizations``, so that the reader's
skipping of non-pass files is tested on a real name); a README records the versions, flags
and date. CI never runs this script: it reads the files it wrote.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

TOPOLOGY = "v5e:2x2"
ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "pass_dumps"

# The child program: compiles one of the programs below for the topology's first device.
CHILD = r"""
import os, sys, json
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax, jax.numpy as jnp
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding

device = topologies.get_topology_desc(sys.argv[2], "tpu").devices[0]
sharding = SingleDeviceSharding(device)
def arg(shape, dtype):
    return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype), sharding=sharding)

def dense_relu_reshape(x, w):
    y = jax.nn.relu(x @ w)                                # (256, 512)
    return y.reshape(128, 2, 512).transpose(1, 2, 0)      # (2, 512, 128)

def mlp_train_step(w1, w2, x, t):
    def loss(params):
        a, b = params
        h = jnp.tanh(x @ a)
        return jnp.mean((h @ b - t) ** 2)
    g1, g2 = jax.grad(loss)((w1, w2))
    return w1 - 0.01 * g1, w2 - 0.01 * g2

def attention_int8(q, k, v):
    scale = jnp.max(jnp.abs(k)) / 127.0
    kq = jnp.round(k / scale).astype(jnp.int8)
    s = jnp.einsum("hqd,hkd->hqk", q, kq.astype(q.dtype) * scale)
    p = jax.nn.softmax(s / 8.0, axis=-1)
    return jnp.einsum("hqk,hkd->hqd", p, v)

def conv_block(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.relu(y + b)
    return jnp.max(y.reshape(y.shape[0], y.shape[1] // 2, 2, y.shape[2] // 2, 2, y.shape[3]), axis=(2, 4))

def transformer_block(x, wq, wk, wv, wo, w1, w2):
    def layer_norm(h):
        m = jnp.mean(h, axis=-1, keepdims=True)
        return (h - m) * jax.lax.rsqrt(jnp.var(h, axis=-1, keepdims=True) + 1e-5)
    def loss(params):
        q_, k_, v_, o_, a_, b_ = params
        h = layer_norm(x)
        q = (h @ q_).reshape(128, 4, 64).transpose(1, 0, 2)
        k = (h @ k_).reshape(128, 4, 64).transpose(1, 0, 2)
        v = (h @ v_).reshape(128, 4, 64).transpose(1, 0, 2)
        p = jax.nn.softmax(jnp.einsum("hqd,hkd->hqk", q, k) / 8.0, axis=-1)
        o = jnp.einsum("hqk,hkd->hqd", p, v).transpose(1, 0, 2).reshape(128, 256) @ o_
        y = x + o
        y = y + jax.nn.gelu(layer_norm(y) @ a_) @ b_
        return jnp.sum(y * y)
    return jax.grad(loss)((wq, wk, wv, wo, w1, w2))

PROGRAMS = {
    "transformer_block": (transformer_block, [arg((128, 256), "float32")] + [arg((256, 256), "float32")] * 4
                          + [arg((256, 512), "float32"), arg((512, 256), "float32")]),
    "dense_relu_reshape": (dense_relu_reshape, [arg((256, 128), "bfloat16"), arg((128, 512), "bfloat16")]),
    "mlp_train_step": (mlp_train_step, [arg((128, 256), "float32"), arg((256, 128), "float32"),
                                        arg((128, 128), "float32"), arg((128, 128), "float32")]),
    "attention_int8": (attention_int8, [arg((2, 128, 64), "bfloat16"), arg((2, 128, 64), "bfloat16"),
                                        arg((2, 128, 64), "bfloat16")]),
    "conv_block": (conv_block, [arg((2, 16, 16, 32), "bfloat16"), arg((3, 3, 32, 64), "bfloat16"),
                                arg((64,), "bfloat16")]),
}
f, args = PROGRAMS[sys.argv[1]]
jax.jit(f).lower(*args).compile()
print(json.dumps({"jax": jax.__version__, "jaxlib": jax.lib.__version__ if hasattr(jax.lib, "__version__") else "?"}))
"""

PROGRAMS = ("dense_relu_reshape", "mlp_train_step", "attention_int8", "conv_block")
# A numbered per-pass module file: module_NNNN.<name>.<id>.NNNN.<pipeline>.after_<p>.before_<q>.txt
PER_PASS = re.compile(r"^module_\d+\.(?P<name>[^.]+)\..*\.\d{4}\..*after_.*\.txt$")
MAX_FILE_BYTES = 200_000


def dump(python: str, program: str, out: pathlib.Path = OUT) -> dict:
    """Compile ``program`` in a child process; copy the kept files into ``out/program``."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(
            os.environ, XLA_FLAGS=f"--xla_dump_to={tmp} --xla_dump_hlo_pass_re=.*", JAX_PLATFORMS="cpu"
        )
        done = subprocess.run(
            [python, "-c", CHILD, program, TOPOLOGY], env=env, capture_output=True, text=True, timeout=900
        )
        if done.returncode != 0:
            raise SystemExit(f"{program}: the compiler failed:\n{done.stderr[-3000:]}")
        versions = json.loads(done.stdout.strip().splitlines()[-1])
        names = sorted(os.listdir(tmp))
        main = [n for n in names if PER_PASS.match(n) and f".jit_{program}." in n]
        target = out / program
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        kept = 0
        for name in main:
            path = pathlib.Path(tmp, name)
            if path.stat().st_size <= MAX_FILE_BYTES:
                shutil.copy(path, target / name)
                kept += 1
        for name in names:
            if f".jit_{program}." in name and name.endswith("before_optimizations.txt"):
                shutil.copy(pathlib.Path(tmp, name), target / name)
        return {"program": program, "files": kept, **versions}


def versions_of(python: str) -> str:
    code = "import importlib.metadata as m; print(m.version('jax'), m.version('jaxlib'), m.version('libtpu'))"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--python", default=os.environ.get("JAX_TPU_PYTHON"), help="a Python with jax[tpu]")
    parser.add_argument("programs", nargs="*", default=list(PROGRAMS), help=f"default: {' '.join(PROGRAMS)}")
    parser.add_argument(
        "--out",
        type=pathlib.Path,
        help="write here instead of tests/data/pass_dumps, without a README (e.g. the larger "
        "transformer_block program that benchmarks/passes.py times: too big to ship)",
    )
    args = parser.parse_args()
    if not args.python:
        raise SystemExit("give --python PATH (or JAX_TPU_PYTHON) of a Python with jax[tpu] installed")
    jax_v, jaxlib_v, libtpu_v = versions_of(args.python).split()
    if args.out is not None:
        for p in args.programs:
            print(dump(args.python, p, args.out))
        return
    rows = [dump(args.python, p) for p in args.programs]
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    readme = [
        "# Per-pass HLO dumps of XLA:TPU (compile-only)",
        "",
        f"Written by `scripts/generate_pass_dumps.py` on {today}: jax {jax_v}, jaxlib {jaxlib_v},",
        f"libtpu {libtpu_v}, topology `{TOPOLOGY}` (first device), no TPU attached,",
        "`XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*`.",
        f"Kept: the numbered per-pass files of each program's main module up to {MAX_FILE_BYTES} bytes,",
        "and its `before_optimizations` file. The programs are in the script.",
        "",
    ]
    readme += [f"- `{r['program']}/`: {r['files']} per-pass files" for r in rows]
    (OUT / "README.md").write_text("\n".join(readme) + "\n")
    print("\n".join(readme))


if __name__ == "__main__":
    sys.exit(main())
