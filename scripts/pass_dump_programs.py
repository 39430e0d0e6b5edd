"""The JAX programs whose per-pass XLA dumps ``generate_pass_dumps.py`` writes (the child side).

Run by ``generate_pass_dumps.py`` in a child process as ``python -c TEXT PROGRAM BACKEND
TOPOLOGY`` (the text, not the path, so that the dumps' ``source_file`` metadata reads
``<string>`` on every machine). ``BACKEND`` is ``tpu`` (compile-only for the first device
of ``TOPOLOGY``: libtpu, no TPU attached) or ``cpu`` (plain JAX on this machine). It
compiles the program once and prints one JSON line with the versions; ``XLA_FLAGS`` in the
environment says where XLA writes the dumps. ``--list`` prints the program names.

Each program is what TPU users run, small enough to ship its dumps: loops, sorting, routing,
attention, norms, quantized types, convolutions, a whole train step.
"""

import json
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np

F32, BF16 = jnp.float32, jnp.bfloat16
_SHARDING = None


def arg(shape, dtype):
    """An abstract argument placed on the compile target."""
    if _SHARDING is None:
        return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype))
    return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype), sharding=_SHARDING)


def layer_norm(h, scale=None, bias=None):
    m = jnp.mean(h, axis=-1, keepdims=True)
    y = (h - m) * jax.lax.rsqrt(jnp.var(h, axis=-1, keepdims=True) + 1e-5)
    if scale is not None:
        y = y * scale + bias
    return y


def rms_norm(h, g):
    h32 = h.astype(F32)
    return (h32 * jax.lax.rsqrt(jnp.mean(h32 * h32, axis=-1, keepdims=True) + 1e-6)).astype(h.dtype) * g


def conv(x, w, strides=(1, 1), padding="SAME", rhs_dilation=(1, 1)):
    return jax.lax.conv_general_dilated(
        x, w, strides, padding, rhs_dilation=rhs_dilation, dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


# ----------------------------------------------------------------------- the first four
def dense_relu_reshape(x, w):
    y = jax.nn.relu(x @ w)  # (256, 512)
    return y.reshape(128, 2, 512).transpose(1, 2, 0)  # (2, 512, 128)


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
    y = conv(x, w)
    y = jax.nn.relu(y + b)
    return jnp.max(y.reshape(y.shape[0], y.shape[1] // 2, 2, y.shape[2] // 2, 2, y.shape[3]), axis=(2, 4))


def transformer_block(x, wq, wk, wv, wo, w1, w2):
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


# ----------------------------------------------------------------------- loops
def scan_rnn(h0, xs, wh, wx, b):
    """A tanh recurrent cell over 16 steps (``lax.scan``): the final state and every step's sum."""

    def cell(h, x):
        h = jnp.tanh(h @ wh + x @ wx + b)
        return h, jnp.sum(h, axis=-1)

    return jax.lax.scan(cell, h0, xs)


def fori_power_iteration(a, v0):
    """Ten steps of power iteration (``lax.fori_loop``) and the Rayleigh quotient."""

    def body(i, v):
        w = a @ v
        return w / jnp.sqrt(jnp.sum(w * w))

    v = jax.lax.fori_loop(0, 10, body, v0)
    return v, v @ (a @ v)


def while_kv_cache(cache, x, wk, steps):
    """A decode loop (``lax.while_loop``) that reads the previous row of a KV cache with
    ``dynamic_slice``, writes the next with ``dynamic_update_slice``, and branches (``lax.cond``)."""

    def cond(carry):
        i, _ = carry
        return i < steps

    def body(carry):
        i, buf = carry
        prev = jax.lax.dynamic_slice(buf, (jnp.maximum(i - 1, 0), 0, 0), (1, 8, 128))[0]
        row = jnp.tanh(prev.astype(F32) @ wk + x).astype(buf.dtype)
        row = jax.lax.cond(i % 2 == 0, lambda r: r, lambda r: -r, row)
        return i + 1, jax.lax.dynamic_update_slice(buf, row[None], (i, 0, 0))

    return jax.lax.while_loop(cond, body, (jnp.int32(1), cache))[1]


# ----------------------------------------------------------------------- sorting, routing, gathers
def sort_topk_argsort(x, keys):
    """``lax.top_k`` of each row, a stable ``argsort`` applied with ``take_along_axis``, a
    column sort and a two-operand sort by key."""
    vals, idx = jax.lax.top_k(x, 8)
    order = jnp.argsort(keys, axis=-1, stable=True)
    ranked = jnp.take_along_axis(x[:, :256], order, axis=-1)
    columns = jnp.sort(x, axis=0)[:4]
    by_key = jax.lax.sort((keys[0], x[0, :256]), num_keys=1)[1]
    return vals, idx, ranked, columns, by_key


def moe_top2(x, wg, w1, w2):
    """A mixture-of-experts layer: softmax gate, top-2 routing with a capacity, tokens
    scattered into expert buffers (one-hot positions by cumsum), expert MLPs, gathered back."""
    tokens, d = x.shape
    experts, capacity = wg.shape[1], 64
    probs = jax.nn.softmax((x @ wg).astype(F32), axis=-1)
    gate, expert = jax.lax.top_k(probs, 2)  # (T, 2)
    gate = gate / jnp.sum(gate, axis=-1, keepdims=True)
    onehot = jax.nn.one_hot(expert.reshape(-1), experts, dtype=jnp.int32)  # (2T, E)
    position = jnp.sum(jnp.cumsum(onehot, axis=0) * onehot, axis=-1) - 1  # (2T,)
    slot = jnp.where(position < capacity, expert.reshape(-1) * capacity + position, experts * capacity)
    routed = jnp.repeat(x, 2, axis=0)  # (2T, d), token t's two copies at 2t, 2t+1
    buf = jnp.zeros((experts * capacity, d), x.dtype).at[slot].set(routed, mode="drop")
    h = jax.nn.gelu(jnp.einsum("ecd,edf->ecf", buf.reshape(experts, capacity, d), w1))
    y = jnp.einsum("ecf,efd->ecd", h, w2).reshape(experts * capacity, d)
    back = y.at[slot].get(mode="fill", fill_value=0).reshape(tokens, 2, d)
    return jnp.sum(back * gate[..., None].astype(x.dtype), axis=1)


def embedding_layernorm_grad(table, ids, pos, scale, bias, t):
    """Token embedding (``gather``) plus position, layer norm with scale and bias, and the
    gradient of a squared loss with respect to the table (a ``scatter``-add)."""

    def loss(table):
        h = jnp.take(table, ids, axis=0) + pos
        return jnp.sum((layer_norm(h, scale, bias) - t) ** 2)

    return jax.value_and_grad(loss)(table)


# ----------------------------------------------------------------------- attention
def decoder_rope_rmsnorm(x, wqkv, wo, w_up, w_down, g1, g2):
    """A decoder block in bf16: RMSNorm, rotary position embeddings, causal softmax
    attention (4 heads of 64), SwiGLU-like MLP."""
    n = x.shape[0]
    h = rms_norm(x, g1)
    q, k, v = (t.reshape(n, 4, 64) for t in jnp.split(h @ wqkv, 3, axis=-1))
    freq = 1.0 / (10000.0 ** (jnp.arange(0, 64, 2, dtype=F32) / 64))
    angle = jnp.arange(n, dtype=F32)[:, None] * freq  # (n, 32)
    cos, sin = jnp.cos(angle)[:, None, :], jnp.sin(angle)[:, None, :]

    def rope(t):
        a, b = t[..., :32].astype(F32), t[..., 32:].astype(F32)
        return jnp.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1).astype(t.dtype)

    q, k = rope(q), rope(k)
    s = jnp.einsum("qhd,khd->hqk", q, k).astype(F32) / 8.0
    s = jnp.where(jnp.tril(jnp.ones((n, n), bool)), s, -1e30)
    p = jax.nn.softmax(s, axis=-1).astype(x.dtype)
    y = x + jnp.einsum("hqk,khd->qhd", p, v).reshape(n, 256) @ wo
    u = rms_norm(y, g2) @ w_up
    gate, up = jnp.split(u, 2, axis=-1)
    return y + (jax.nn.silu(gate) * up) @ w_down


# ----------------------------------------------------------------------- quantized types
def int4_matmul(x, w4, scale):
    """Weight-only int4: s4 weights widened to bf16, scaled per column, then a bf16 matmul."""
    return x @ (w4.astype(BF16) * scale)


def int8_matmul(x, w8, w_scale):
    """Activations quantized per row to int8, an s8 x s8 -> s32 dot, dequantized."""
    x_scale = jnp.max(jnp.abs(x), axis=-1, keepdims=True) / 127.0
    xq = jnp.clip(jnp.round(x / x_scale), -127, 127).astype(jnp.int8)
    acc = jax.lax.dot(xq, w8, preferred_element_type=jnp.int32)
    return acc.astype(F32) * x_scale * w_scale


def fp8_matmul(x, w, x_scale, w_scale):
    """An fp8 matmul: activations scaled and cast to e4m3fn, e4m3fn weights, f32 accumulation,
    and the output also cast to e5m2 (a gradient type)."""
    xq = jnp.clip(x.astype(F32) / x_scale, -448.0, 448.0).astype(jnp.float8_e4m3fn)
    y = jax.lax.dot(xq, w, preferred_element_type=F32) * (x_scale * w_scale)
    return y.astype(BF16), y.astype(jnp.float8_e5m2)


def u8_image_preprocess(img, mean, std):
    """u8 images to normalized floats: /255, per-channel mean and std, centre crop,
    horizontal flip, 2x2 average downsampling, NCHW bf16; and back to u8."""
    x = img.astype(F32) / 255.0
    x = (x - mean) / std
    x = jnp.flip(x[:, 8:56, 8:56, :], axis=2)
    n, h, w, c = x.shape
    x = x.reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))
    back = jnp.clip(jnp.round((x * std + mean) * 255.0), 0, 255).astype(jnp.uint8)
    return x.transpose(0, 3, 1, 2).astype(BF16), back


# ----------------------------------------------------------------------- convolutions, scans, shapes
def conv_strided_dilated_bn_pool(x, w1, w2, w3, gamma, beta):
    """A stride-2 convolution, a dilated (atrous) one, a transposed one (base dilation),
    training-mode batch norm, relu, 3x3/2 max pooling and 2x2 average pooling."""
    y = conv(x, w1, strides=(2, 2))
    y = conv(y, w2, rhs_dilation=(2, 2))
    mean, var = jnp.mean(y, axis=(0, 1, 2)), jnp.var(y, axis=(0, 1, 2))
    y = jax.nn.relu((y - mean) * jax.lax.rsqrt(var + 1e-5) * gamma + beta)
    up = jax.lax.conv_transpose(y, w3, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    m = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    a = jax.lax.reduce_window(y, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
    return m, a, up, mean, var


def cumsum_pad_concat_reverse(x, y):
    """Prefix sums both ways, a cumulative max, constant / edge / interior padding,
    a concatenation and reversals."""
    c = jnp.cumsum(x, axis=1)
    r = jnp.flip(jnp.cumsum(jnp.flip(x, axis=1), axis=1), axis=1)
    cm = jax.lax.cummax(x, axis=0)
    p = jnp.pad(y, ((0, 0), (64, 64)))
    e = jnp.pad(y, ((2, 2), (3, 3)), mode="edge")
    i = jax.lax.pad(y, 0.0, ((1, -1, 1), (0, 0, 0)))
    z = jnp.concatenate([c, r, p, cm[::-1]], axis=1)
    return z, jnp.flip(e, axis=(0, 1)), i


# ----------------------------------------------------------------------- a whole train step
VOCAB, SEQ, BATCH, DIM, HEADS, HIDDEN, LAYERS = 512, 64, 4, 128, 4, 512, 2


def transformer_params(layers=LAYERS):
    layer = {
        "ln1": ((DIM,), F32),
        "ln1b": ((DIM,), F32),
        "wqkv": ((DIM, 3 * DIM), F32),
        "wo": ((DIM, DIM), F32),
        "ln2": ((DIM,), F32),
        "ln2b": ((DIM,), F32),
        "w1": ((DIM, HIDDEN), F32),
        "w2": ((HIDDEN, DIM), F32),
    }
    return {
        "embed": ((VOCAB, DIM), F32),
        "pos": ((SEQ, DIM), F32),
        "layers": [dict(layer) for _ in range(layers)],
        "lnf": ((DIM,), F32),
        "lnfb": ((DIM,), F32),
    }


def transformer_loss(params, tokens, targets):
    h = jnp.take(params["embed"], tokens, axis=0) + params["pos"]
    mask = jnp.tril(jnp.ones((SEQ, SEQ), bool))
    for p in params["layers"]:
        a = layer_norm(h, p["ln1"], p["ln1b"])
        q, k, v = (t.reshape(BATCH, SEQ, HEADS, DIM // HEADS) for t in jnp.split(a @ p["wqkv"], 3, axis=-1))
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(DIM // HEADS)
        s = jnp.where(mask, s, -1e9)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v).reshape(BATCH, SEQ, DIM)
        h = h + o @ p["wo"]
        h = h + jax.nn.gelu(layer_norm(h, p["ln2"], p["ln2b"]) @ p["w1"]) @ p["w2"]
    logits = layer_norm(h, params["lnf"], params["lnfb"]) @ params["embed"].T
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


def transformer_train_adam(params, m, v, step, tokens, targets):
    """A two-layer causal transformer's train step: loss, gradients, and an Adam update
    (bias-corrected, with weight decay) of every parameter and both moments."""
    loss, grads = jax.value_and_grad(transformer_loss)(params, tokens, targets)
    b1, b2, lr, eps, wd = 0.9, 0.999, 1e-3, 1e-8, 0.01
    t = step + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    c1, c2 = 1 - b1 ** t.astype(F32), 1 - b2 ** t.astype(F32)
    params = jax.tree.map(
        lambda p, m, v: p - lr * ((m / c1) / (jnp.sqrt(v / c2) + eps) + wd * p), params, m, v
    )
    return loss, params, m, v, t


def transformer_train_adam_12(params, m, v, step, tokens, targets):
    """The same train step with 12 layers (~20k instructions): too big to ship, generated by
    ``benchmarks/passes_corpus.py --generate-large``."""
    return transformer_train_adam(params, m, v, step, tokens, targets)


def train_args(layers=LAYERS):
    tree = transformer_params(layers)
    specs = jax.tree.map(
        lambda s: arg(*s),
        tree,
        is_leaf=lambda s: isinstance(s, tuple) and len(s) == 2 and isinstance(s[0], tuple),
    )
    return [
        specs,
        specs,
        specs,
        arg((), jnp.int32),
        arg((BATCH, SEQ), jnp.int32),
        arg((BATCH, SEQ), jnp.int32),
    ]


def programs():
    """name -> (function, abstract arguments)."""
    f32 = "float32"
    bf16 = "bfloat16"
    return {
        "dense_relu_reshape": (dense_relu_reshape, [arg((256, 128), bf16), arg((128, 512), bf16)]),
        "mlp_train_step": (
            mlp_train_step,
            [arg((128, 256), f32), arg((256, 128), f32), arg((128, 128), f32), arg((128, 128), f32)],
        ),
        "attention_int8": (attention_int8, [arg((2, 128, 64), bf16)] * 3),
        "conv_block": (conv_block, [arg((2, 16, 16, 32), bf16), arg((3, 3, 32, 64), bf16), arg((64,), bf16)]),
        "transformer_block": (
            transformer_block,
            [arg((128, 256), f32)]
            + [arg((256, 256), f32)] * 4
            + [arg((256, 512), f32), arg((512, 256), f32)],
        ),
        "scan_rnn": (
            scan_rnn,
            [
                arg((8, 128), f32),
                arg((16, 8, 64), f32),
                arg((128, 128), f32),
                arg((64, 128), f32),
                arg((128,), f32),
            ],
        ),
        "fori_power_iteration": (fori_power_iteration, [arg((256, 256), f32), arg((256,), f32)]),
        "while_kv_cache": (
            while_kv_cache,
            [arg((32, 8, 128), bf16), arg((8, 128), f32), arg((128, 128), f32), arg((), "int32")],
        ),
        "sort_topk_argsort": (sort_topk_argsort, [arg((64, 1024), f32), arg((64, 256), "int32")]),
        "moe_top2": (
            moe_top2,
            [arg((256, 128), bf16), arg((128, 8), bf16), arg((8, 128, 256), bf16), arg((8, 256, 128), bf16)],
        ),
        "embedding_layernorm_grad": (
            embedding_layernorm_grad,
            [
                arg((1000, 128), f32),
                arg((4, 64), "int32"),
                arg((64, 128), f32),
                arg((128,), f32),
                arg((128,), f32),
                arg((4, 64, 128), f32),
            ],
        ),
        "decoder_rope_rmsnorm": (
            decoder_rope_rmsnorm,
            [
                arg((128, 256), bf16),
                arg((256, 768), bf16),
                arg((256, 256), bf16),
                arg((256, 1024), bf16),
                arg((512, 256), bf16),
                arg((256,), bf16),
                arg((256,), bf16),
            ],
        ),
        "int4_matmul": (int4_matmul, [arg((128, 512), bf16), arg((512, 256), "int4"), arg((256,), bf16)]),
        "int8_matmul": (int8_matmul, [arg((128, 512), f32), arg((512, 256), "int8"), arg((256,), f32)]),
        "fp8_matmul": (
            fp8_matmul,
            [arg((128, 256), bf16), arg((256, 256), "float8_e4m3fn"), arg((), f32), arg((), f32)],
        ),
        "u8_image_preprocess": (
            u8_image_preprocess,
            [arg((4, 64, 64, 3), "uint8"), arg((3,), f32), arg((3,), f32)],
        ),
        "conv_strided_dilated_bn_pool": (
            conv_strided_dilated_bn_pool,
            [
                arg((8, 32, 32, 16), f32),
                arg((3, 3, 16, 32), f32),
                arg((3, 3, 32, 32), f32),
                arg((3, 3, 32, 16), f32),
                arg((32,), f32),
                arg((32,), f32),
            ],
        ),
        "cumsum_pad_concat_reverse": (cumsum_pad_concat_reverse, [arg((64, 256), f32), arg((64, 128), f32)]),
        "transformer_train_adam": (transformer_train_adam, train_args()),
        "transformer_train_adam_12": (transformer_train_adam_12, train_args(12)),
    }


def main(argv):
    global _SHARDING
    if argv[1:] == ["--list"]:
        print(json.dumps(list(programs())))
        return
    program, backend, topology = argv[1:4]
    if backend == "tpu":
        from jax.experimental import topologies
        from jax.sharding import SingleDeviceSharding

        _SHARDING = SingleDeviceSharding(topologies.get_topology_desc(topology, "tpu").devices[0])
    elif backend != "cpu":
        raise SystemExit(f"backend {backend!r}: expected tpu or cpu")
    f, args = programs()[program]
    jax.jit(f).lower(*args).compile()
    print(json.dumps({"jax": jax.__version__, "backend": backend}))


if __name__ == "__main__":
    main(sys.argv)
