"""The JAX conversions against the real JAX (opt-in: marker ``oracle``; needs ``pip install jax``).

The default suite tests the same logic through fakes (``test_interop.py``); here the
fields are handed to JAX itself, and JAX's own ``Layout._to_xla_layout`` says which XLA
layout it would request. ``importorskip`` is inside each test so that the default run,
which deselects these tests, never reports a skip.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from support.strategies import array_shapes

from layout_algebra import interop
from layout_algebra.interop import NotExpressible
from layout_algebra.model import ArrayShape, Layout

pytestmark = pytest.mark.oracle


def _jax():
    return pytest.importorskip("jax")


@settings(max_examples=100, suppress_health_check=list(HealthCheck))
@given(array_shapes(dynamic=False, max_dim=8, combine=False))
def test_to_jax_layout_is_what_jax_asks_xla_for(shape: ArrayShape) -> None:
    _jax()
    import numpy as np

    layout = shape.effective_layout
    try:
        jax_layout = interop.to_jax_layout(shape)
    except (NotExpressible, ValueError):
        assume(False)
    dtype = np.dtype(interop.jax_layouts.numpy_dtype_name(shape.element_type.text))
    requested = jax_layout._to_xla_layout(dtype).to_string()
    plain = Layout(layout.minor_to_major, layout.tiles, element_size_in_bits=layout.element_size_in_bits)
    assert requested == str(plain)
    assert (
        interop.from_jax_layout(jax_layout, shape.element_type.text, shape.dimensions).effective_layout
        == plain
    )


def test_shapes_of_a_compiled_cpu_function() -> None:
    jax = _jax()
    import jax.numpy as jnp

    compiled = (
        jax.jit(lambda x, y: (x.T @ y, x + 1))
        .lower(jnp.ones((8, 128), jnp.bfloat16), y=jnp.ones((8, 4), jnp.bfloat16))
        .compile()
    )
    inputs, outputs = interop.shapes_of_compiled(compiled)
    assert [str(s) for s in inputs] == ["bf16[8,128]{1,0}", "bf16[8,4]{1,0}"]
    assert [str(s) for s in outputs] == ["bf16[128,4]{1,0}", "bf16[8,128]{1,0}"]
    params, result = interop.entry_shapes_of_compiled(compiled)
    assert [str(p) for p in params] == [str(s) for s in inputs]
    assert str(result) == "(bf16[128,4]{1,0}, bf16[8,128]{1,0})"


def test_to_jax_format_pins_a_layout_jax_accepts() -> None:
    jax = _jax()
    import jax.numpy as jnp
    from jax.sharding import SingleDeviceSharding

    sharding = SingleDeviceSharding(jax.devices("cpu")[0])
    fmt = interop.to_jax_format("f32[8,128]{0,1}", sharding)
    compiled = (
        jax.jit(lambda x: x * 2, in_shardings=fmt)
        .lower(jax.ShapeDtypeStruct((8, 128), jnp.float32, sharding=sharding))
        .compile()
    )
    inputs, _ = interop.shapes_of_compiled(compiled)
    assert str(inputs[0]) == "f32[8,128]{0,1}"
    assert interop.from_jax_format(fmt, "f32", (8, 128)) == inputs[0]
