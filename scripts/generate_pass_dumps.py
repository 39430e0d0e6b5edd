"""Write per-pass HLO dumps of real JAX programs (XLA:TPU and XLA:CPU) into ``tests/data/pass_dumps``.

The dumps are what ``layout_algebra.hlo.validate_passes`` (and ``layout-algebra
validate-passes``) check: XLA prints the module after every pass that changed it, and the
validator proves, refutes or leaves unknown each consecutive pair. The programs are in
``scripts/pass_dump_programs.py``.

Run it with a Python that has ``jax[tpu]`` installed (libtpu compiles for a TPU topology
on a CPU-only machine; no TPU is needed; the same Python compiles for XLA:CPU)::

    python3 -m venv /tmp/tpu-venv && /tmp/tpu-venv/bin/pip install 'jax[tpu]==0.10.2'
    # the four test fixtures, uncompressed: tests/data/pass_dumps/<program>/ and its README
    python3 scripts/generate_pass_dumps.py --python /tmp/tpu-venv/bin/python
    # the corpus: every program, both backends, one .tar.xz each in tests/data/pass_dumps/corpus/
    python3 scripts/generate_pass_dumps.py --python /tmp/tpu-venv/bin/python --corpus
    # any programs into a directory of your choice, uncompressed (e.g. for benchmarks)
    python3 scripts/generate_pass_dumps.py --python PY --out /tmp/dumps --backend cpu scan_rnn
    # (JAX_TPU_PYTHON=PY may replace --python)

Each program is compiled in its own child process (one libtpu process at a time) with
``XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*``. Only the numbered per-pass files
of the program's main module are kept (the fixtures also keep ``before_optimizations``, so
that the reader's skipping of non-pass files is tested on a real name); a README records
the versions, flags and date. CI never runs this script: it reads the files it wrote.

A corpus archive ``<program>.<backend>.tar.xz`` holds one directory ``<program>.<backend>/``
with every per-pass file of the main module, byte for byte (xz shares the text that
consecutive passes repeat); :func:`extract` unpacks one for ``validate-passes``.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

TOPOLOGY = "v5e:2x2"
BACKENDS = ("tpu", "cpu")
ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "pass_dumps"
CORPUS = OUT / "corpus"
CHILD = pathlib.Path(__file__).with_name("pass_dump_programs.py")

#: the test fixtures: uncompressed directories of their XLA:TPU dumps
FIXTURES = ("dense_relu_reshape", "mlp_train_step", "attention_int8", "conv_block")
#: the corpus, in the order of the tables
PROGRAMS = (
    *FIXTURES,
    "scan_rnn",
    "fori_power_iteration",
    "while_kv_cache",
    "sort_topk_argsort",
    "moe_top2",
    "embedding_layernorm_grad",
    "decoder_rope_rmsnorm",
    "int4_matmul",
    "int8_matmul",
    "fp8_matmul",
    "u8_image_preprocess",
    "conv_strided_dilated_bn_pool",
    "cumsum_pad_concat_reverse",
    "transformer_train_adam",
)
#: programs too big to ship: written with --out only (benchmarks generate them)
LARGE = ("transformer_block", "transformer_train_adam_12")
# A numbered per-pass module file: module_NNNN.<name>[.<id>].NNNN.<pipeline>.after_<p>[.before_<q>].txt
PER_PASS = re.compile(r"^module_\d+\..+?\.\d{4}\.[^/]*?\.after_.*\.txt$")
MAX_FILE_BYTES = 200_000
INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%?[\w.\-]+ = ", re.MULTILINE)


def compile_with_dumps(python: str, program: str, backend: str, tmp: str) -> dict:
    """Compile ``program`` for ``backend`` in a child process, XLA dumping into ``tmp``."""
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={tmp} --xla_dump_hlo_pass_re=.*", JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [python, "-c", CHILD.read_text(), program, backend, TOPOLOGY],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise SystemExit(f"{program} ({backend}): the compiler failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main_module_files(tmp: str, program: str) -> list[str]:
    """The numbered per-pass files of the program's main module, in name order."""
    return [n for n in sorted(os.listdir(tmp)) if PER_PASS.match(n) and f".jit_{program}." in n]


def dump(
    python: str,
    program: str,
    out: pathlib.Path = OUT,
    backend: str = "tpu",
    max_bytes: int | None = MAX_FILE_BYTES,
) -> dict:
    """Compile ``program``; copy the kept files (up to ``max_bytes`` each, or all) into ``out/program``."""
    with tempfile.TemporaryDirectory() as tmp:
        compile_with_dumps(python, program, backend, tmp)
        target = out / program
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        kept = 0
        for name in main_module_files(tmp, program):
            path = pathlib.Path(tmp, name)
            if max_bytes is None or path.stat().st_size <= max_bytes:
                shutil.copy(path, target / name)
                kept += 1
        for name in sorted(os.listdir(tmp)):
            if f".jit_{program}." in name and name.endswith("before_optimizations.txt"):
                shutil.copy(pathlib.Path(tmp, name), target / name)
        return {"program": program, "files": kept}


def instruction_count(text: str) -> int:
    """Instructions of every computation of a module's text (lines ``name = ...``).

    >>> instruction_count("HloModule m\\nENTRY e {\\n  a = f32[] parameter(0)\\n  ROOT b = f32[] negate(a)\\n}")
    2
    """
    return len(INSTRUCTION.findall(text))


def archive(python: str, program: str, backend: str, out: pathlib.Path = CORPUS) -> dict:
    """Compile ``program`` for ``backend``; write every per-pass file of its main module into
    ``out/<program>.<backend>.tar.xz`` (reproducible: sorted, no owners, time 0)."""
    with tempfile.TemporaryDirectory() as tmp:
        compile_with_dumps(python, program, backend, tmp)
        names = main_module_files(tmp, program)
        if not names:
            raise SystemExit(f"{program} ({backend}): XLA wrote no per-pass files into the dump directory")
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"{program}.{backend}.tar.xz"
        raw = 0
        with tarfile.open(target, "w:xz", preset=9) as tar:
            for name in names:
                data = pathlib.Path(tmp, name).read_bytes()
                raw += len(data)
                info = tarfile.TarInfo(f"{program}.{backend}/{name}")
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                tar.addfile(info, io.BytesIO(data))
        last = pathlib.Path(tmp, names[-1]).read_text()
        return {
            "program": program,
            "backend": backend,
            "files": len(names),
            "instructions": instruction_count(last),
            "raw_bytes": raw,
            "xz_bytes": target.stat().st_size,
        }


def extract(archive_path: pathlib.Path, into: pathlib.Path) -> pathlib.Path:
    """Unpack a corpus archive into ``into``; the dump directory it holds."""
    with tarfile.open(archive_path, "r:xz") as tar:
        members = tar.getmembers()
        tops = {pathlib.PurePosixPath(m.name).parts[0] for m in members}
        if len(tops) != 1 or any(not m.isfile() for m in members):
            raise ValueError(f"{archive_path}: expected regular files in one directory, found {sorted(tops)}")
        tar.extractall(into, filter="data")
    return into / tops.pop()


def versions_of(python: str) -> str:
    code = "import importlib.metadata as m; print(m.version('jax'), m.version('jaxlib'), m.version('libtpu'))"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def write_corpus(
    python: str, programs: list[str], backends: list[str], versions: tuple[str, str, str]
) -> None:
    """Archives for every program and backend, one compile at a time, and the corpus README."""
    rows = []
    for program in programs:
        for backend in backends:
            row = archive(python, program, backend)
            print(json.dumps(row), flush=True)
            rows.append(row)
    jax_v, jaxlib_v, libtpu_v = versions
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    readme = [
        "# A corpus of per-pass HLO dumps: XLA:TPU (compile-only) and XLA:CPU",
        "",
        f"Written by `scripts/generate_pass_dumps.py --corpus` on {today}: jax {jax_v}, jaxlib {jaxlib_v},",
        f"libtpu {libtpu_v}. XLA:TPU: topology `{TOPOLOGY}` (first device), no TPU attached. XLA:CPU:",
        "plain JAX on the CPU of the generating machine (x86_64). Both with",
        "`XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*`, one child process per compile.",
        "The programs are in `scripts/pass_dump_programs.py` (run as `python -c TEXT`, so that the",
        "dumps' `source_file` metadata reads `<string>`).",
        "",
        "`<program>.<backend>.tar.xz` holds one directory `<program>.<backend>/` with every numbered",
        "per-pass file of the program's main module, byte for byte (nothing else XLA wrote: no",
        "`before_optimizations`, buffer assignment, LLVM IR or object files). Unpack one with",
        "`tar -xJf` (or `generate_pass_dumps.extract`) and give the directory to `validate-passes`.",
        "The four test fixtures (`../<program>/`) are the same programs' XLA:TPU dumps, uncompressed.",
        "",
        "| archive | per-pass files | instructions (last pass) | text bytes | xz bytes |",
        "|---|---:|---:|---:|---:|",
    ]
    old = {}
    if (CORPUS / "README.md").exists():  # keep the rows of archives not rewritten this time
        for line in (CORPUS / "README.md").read_text().splitlines():
            m = re.match(r"^\| `(\S+)\.tar\.xz` \|", line)
            if m:
                old[m[1]] = line
    for r in rows:
        old[f"{r['program']}.{r['backend']}"] = (
            f"| `{r['program']}.{r['backend']}.tar.xz` | {r['files']} | {r['instructions']} | "
            f"{r['raw_bytes']:,} | {r['xz_bytes']:,} |"
        )
    order = {f"{p}.{b}": k for k, (p, b) in enumerate((p, b) for p in PROGRAMS for b in BACKENDS)}
    readme += [old[k] for k in sorted(old, key=lambda k: order.get(k, len(order)))]
    (CORPUS / "README.md").write_text("\n".join(readme) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--python", default=os.environ.get("JAX_TPU_PYTHON"), help="a Python with jax[tpu]")
    parser.add_argument(
        "programs", nargs="*", help=f"default: the fixtures, or with --corpus: {' '.join(PROGRAMS)}"
    )
    parser.add_argument("--corpus", action="store_true", help="write tests/data/pass_dumps/corpus/*.tar.xz")
    parser.add_argument(
        "--backend", choices=(*BACKENDS, "both"), default=None, help="default: tpu (--corpus: both)"
    )
    parser.add_argument(
        "--out",
        type=pathlib.Path,
        help="write uncompressed directories here (every per-pass file, OUT/<backend>/<program> with "
        "--backend both) instead of tests/data/pass_dumps, without a README (e.g. the programs too big "
        f"to ship: {', '.join(LARGE)})",
    )
    args = parser.parse_args()
    if not args.python:
        raise SystemExit("give --python PATH (or JAX_TPU_PYTHON) of a Python with jax[tpu] installed")
    unknown = sorted(set(args.programs) - set(PROGRAMS) - set(LARGE))
    if unknown:
        raise SystemExit(
            f"unknown program(s) {', '.join(unknown)}: expected some of {' '.join(PROGRAMS + LARGE)}"
        )
    versions = tuple(versions_of(args.python).split())
    backend = args.backend or ("both" if args.corpus else "tpu")
    backends = list(BACKENDS) if backend == "both" else [backend]
    if args.corpus:
        write_corpus(args.python, args.programs or list(PROGRAMS), backends, versions)
        return
    if args.out is not None:
        for p in args.programs:
            for b in backends:
                print(
                    dump(args.python, p, args.out / b if len(backends) > 1 else args.out, b, max_bytes=None)
                )
        return
    rows = [dump(args.python, p) for p in args.programs or list(FIXTURES)]
    jax_v, jaxlib_v, libtpu_v = versions
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    readme = [
        "# Per-pass HLO dumps of XLA:TPU (compile-only)",
        "",
        f"Written by `scripts/generate_pass_dumps.py` on {today}: jax {jax_v}, jaxlib {jaxlib_v},",
        f"libtpu {libtpu_v}, topology `{TOPOLOGY}` (first device), no TPU attached,",
        "`XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*`.",
        f"Kept: the numbered per-pass files of each program's main module up to {MAX_FILE_BYTES} bytes,",
        "and its `before_optimizations` file. The programs are in `scripts/pass_dump_programs.py`.",
        "",
    ]
    readme += [f"- `{r['program']}/`: {r['files']} per-pass files" for r in rows]
    readme += ["", "`corpus/`: more programs, XLA:TPU and XLA:CPU, compressed (its README says how)."]
    (OUT / "README.md").write_text("\n".join(readme) + "\n")
    print("\n".join(readme))


if __name__ == "__main__":
    sys.exit(main())
