"""Child process for the oracle suite: ask the XLA:TPU compiler (compile-only, no TPU needed).

Runs under a Python that has ``jax[tpu]`` (libtpu) installed; it needs nothing from
``layout_algebra``. Reads a JSON list of queries on stdin, writes one JSON answer per
line on stdout *as soon as each is done* (so that when libtpu aborts the process, the
answers before the crash survive and the parent knows which query crashed).

A layout is given as JAX ``Layout`` fields: ``{"major_to_minor": [...], "tiling": [[...]]
or null, "sub_byte": n}``. Query kinds:

* ``{"kind": "bytes", "dtype", "dims", "layout"}``: pin the argument's layout, compile
  ``lambda x: x``; answer the argument bytes (``memory_analysis``) and the entry layout;
* ``{"kind": "default", "dtype", "dims"}``: no pinned layout; the compiler's choice;
* ``{"kind": "reshape", "dtype", "src_dims", "src", "dst_dims", "dst"}`` and
  ``{"kind": "transpose", ..., "permutation"}``: pin both layouts, compile, answer the
  ENTRY opcodes (a pure bitcast has only ``parameter`` and ``bitcast``);
* ``{"kind": "parse", "text"}``: XLA's own shape parser (``xla_client.Shape``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback

TOPOLOGY = os.environ.get("ORACLE_TOPOLOGY", "v5e:2x2")


def main() -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")  # the TPU is only a compile target, from a topology
    import jax
    import jax.numpy as jnp
    from jax.experimental import topologies
    from jax.experimental.layout import Format, Layout
    from jax.sharding import SingleDeviceSharding

    queries = json.load(sys.stdin)
    device = topologies.get_topology_desc(TOPOLOGY, "tpu").devices[0]
    sharding = SingleDeviceSharding(device)

    def fmt(fields):
        tiling = None if fields["tiling"] is None else tuple(tuple(t) for t in fields["tiling"])
        return Format(Layout(tuple(fields["major_to_minor"]), tiling, fields["sub_byte"]), sharding)

    def aval(dtype, dims):
        return jax.ShapeDtypeStruct(tuple(dims), jnp.dtype(dtype), sharding=sharding)

    def entry(compiled):
        text = compiled.as_text()
        layout = re.search(r"entry_computation_layout=\{(.*?)\}(?:, |\n)", text)
        body = text[text.index("\nENTRY") :]
        body = body[: body.index("\n}")]
        ops = sorted({m for m in re.findall(r"=\s*\S+\s+([a-z][\w-]*)\(", body)})
        return (layout.group(1) if layout else None), ops

    for q in queries:
        answer = {"id": q["id"]}
        try:
            kind = q["kind"]
            if kind == "parse":
                from jax._src.lib import xla_client

                answer["printed"] = str(xla_client.Shape(q["text"]))
            elif kind in ("bytes", "default"):
                if kind == "bytes":
                    f = jax.jit(lambda x: x, in_shardings=fmt(q["layout"]))
                else:
                    f = jax.jit(lambda x: x, in_shardings=sharding)
                compiled = f.lower(aval(q["dtype"], q["dims"])).compile()
                answer["bytes"] = compiled.memory_analysis().argument_size_in_bytes
                answer["entry"], answer["ops"] = entry(compiled)
                chosen = compiled.input_formats[0][0]
                answer["format"] = {
                    "major_to_minor": list(chosen.layout.major_to_minor),
                    "tiling": None
                    if chosen.layout.tiling is None
                    else [list(t) for t in chosen.layout.tiling],
                    "sub_byte": chosen.layout.sub_byte_element_size_in_bits,
                    "memory_kind": chosen.sharding.memory_kind,
                }
            elif kind in ("reshape", "transpose"):
                dst_dims = tuple(q["dst_dims"])
                if kind == "reshape":
                    body = lambda x, dims=dst_dims: x.reshape(dims)  # noqa: E731
                else:
                    perm = tuple(q["permutation"])
                    body = lambda x, perm=perm: jnp.transpose(x, perm)  # noqa: E731
                f = jax.jit(body, in_shardings=fmt(q["src"]), out_shardings=fmt(q["dst"]), donate_argnums=0)
                compiled = f.lower(aval(q["dtype"], q["src_dims"])).compile()
                answer["entry"], answer["ops"] = entry(compiled)
            else:
                answer["error"] = f"unknown query kind {kind!r}"
        except Exception as err:  # the compiler rejected the query: that is an answer too
            answer["error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:500]
            if os.environ.get("ORACLE_DEBUG"):
                traceback.print_exc()
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
