"""Where a JAX program's layouts come from: compile a function, read its formats as XLA shapes.

Compiles a small dense layer with ``jax.jit(f).lower(...).compile()`` on whatever backend
JAX has (on a CPU the layouts are row-major and untiled, ``{1,0}``), prints each argument's
and result's layout as an XLA shape read by ``layout_algebra.interop``, and then what
XLA:TPU would choose for the same arrays (``layout_algebra.target.tpu.default_layout``, the rule
checked against the real compiler) with the bytes each takes. Without JAX it says so and
prints the TPU part only. The tutorial's section 12 walks through the same calls.

Run:  python examples/jax_layouts.py
"""

import layout_algebra as la
from layout_algebra.interop.jax_layouts import shapes_of_compiled

ARGUMENTS = {"x": ("bf16", (256, 1024)), "w": ("bf16", (1024, 512)), "b": ("f32", (512,))}
RESULT = ("bf16", (256, 512))

try:
    import jax
    import jax.numpy as jnp
except ModuleNotFoundError:
    jax = None
    print("JAX is not installed (pip install 'layout_algebra[jax]'): only the TPU defaults are shown")
else:
    if not hasattr(jax.stages.Compiled, "input_formats"):
        print(
            f"JAX {jax.__version__} has no Compiled.input_formats (JAX >= 0.7): only the TPU defaults are shown"
        )
        jax = None

if jax is not None:

    def dense(x, w, b):
        return jnp.maximum(x @ w + b, 0).astype(jnp.bfloat16)

    avals = [
        jax.ShapeDtypeStruct(dims, jnp.dtype(la.interop.jax_layouts.numpy_dtype_name(t)))
        for t, dims in ARGUMENTS.values()
    ]
    compiled = jax.jit(dense).lower(*avals).compile()
    inputs, outputs = shapes_of_compiled(compiled)
    print(f"compiled on {jax.devices()[0].platform}:")
    for name, shape in zip(ARGUMENTS, inputs, strict=True):
        print(f"  {name:6} {shape}")
    for shape in outputs:
        print(f"  result {shape}")

print("XLA:TPU's default layouts for the same arrays:")
for name, (element_type, dims) in {**ARGUMENTS, "result": RESULT}.items():
    shape = la.tpu.default_layout(element_type, list(dims))
    print(f"  {name:6} {shape!s:40} {la.physical_size_in_bytes(shape):>9,} bytes")
