"""The JAX functions of benchmarks/jax_peers.py: name, function, and the domain of each argument.

Every function is smooth on its domain (no kink, no branch cut, distinct values where it sorts or
takes a maximum), takes arrays and returns an array or a tuple of arrays. The first argument is a
4×4 matrix wherever the function allows, so that a transposed gradient is a real mutation.
"""

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import jax.scipy.special as jss
import numpy as np
from jax import lax

#: The values each domain draws from, uniform in [low, high].
DOMAINS = {"real": (-1.5, 1.5), "unit": (-0.9, 0.9), "positive": (0.3, 2.0), "prob": (0.05, 0.95), "gt1": (1.1, 3.0)}
SQUARE = (4, 4)


def _spd(a):
    return a @ a.T + 4.0 * jnp.eye(a.shape[0], dtype=a.dtype)


def _symmetric(a):
    return 0.5 * (a + a.T)


def _layer_norm(x, weight, bias):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    return centered * lax.rsqrt(jnp.mean(centered**2, axis=-1, keepdims=True) + 1e-5) * weight + bias


def _attention(x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv
    return jax.nn.softmax(q @ k.T / 2.0, axis=-1) @ v


def _mlp(x, w1, b1, w2):
    return jnp.tanh(x @ w1 + b1) @ w2


def _gru(h, x, wz, wr, wh):
    z = jax.nn.sigmoid(x @ wz + h)
    r = jax.nn.sigmoid(x @ wr - h)
    return (1 - z) * h + z * jnp.tanh(x @ wh + r * h)


def _cross_entropy(logits, weights):
    labels = jnp.array([0, 2, 1, 3])
    return -jnp.mean(weights[:, 0] * jax.nn.log_softmax(logits)[jnp.arange(4), labels])


def _conv(x, kernel):
    return lax.conv_general_dilated(x[None, None], kernel[None, None], (1, 1), "SAME")[0, 0]


def _rms_norm(x, weight):
    return x * lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * weight


def _unary(domain="real"):
    return ((SQUARE, domain),)


def _binary(first="real", second="real"):
    return ((SQUARE, first), (SQUARE, second))


UNARY = {
    "jnp.sin": (jnp.sin, "real"),
    "jnp.cos": (jnp.cos, "real"),
    "jnp.tan": (jnp.tan, "unit"),
    "jnp.tanh": (jnp.tanh, "real"),
    "jnp.sinh": (jnp.sinh, "real"),
    "jnp.cosh": (jnp.cosh, "real"),
    "jnp.arcsin": (jnp.arcsin, "unit"),
    "jnp.arccos": (jnp.arccos, "unit"),
    "jnp.arctan": (jnp.arctan, "real"),
    "jnp.arcsinh": (jnp.arcsinh, "real"),
    "jnp.arccosh": (jnp.arccosh, "gt1"),
    "jnp.arctanh": (jnp.arctanh, "unit"),
    "jnp.exp": (jnp.exp, "real"),
    "jnp.exp2": (jnp.exp2, "real"),
    "jnp.expm1": (jnp.expm1, "real"),
    "jnp.log": (jnp.log, "positive"),
    "jnp.log1p": (jnp.log1p, "positive"),
    "jnp.log2": (jnp.log2, "positive"),
    "jnp.log10": (jnp.log10, "positive"),
    "jnp.sqrt": (jnp.sqrt, "positive"),
    "jnp.cbrt": (jnp.cbrt, "positive"),
    "jnp.reciprocal": (jnp.reciprocal, "positive"),
    "jnp.square": (jnp.square, "real"),
    "jnp.sinc": (jnp.sinc, "positive"),
    "jnp.deg2rad": (jnp.deg2rad, "real"),
    "jnp.cumsum": (lambda x: jnp.cumsum(x, axis=1), "real"),
    "jnp.cumprod": (lambda x: jnp.cumprod(x, axis=0), "positive"),
    "jnp.sum": (lambda x: jnp.sum(x**3, axis=0), "real"),
    "jnp.mean": (lambda x: jnp.mean(jnp.sin(x), axis=1), "real"),
    "jnp.prod": (lambda x: jnp.prod(x, axis=1), "positive"),
    "jnp.var": (lambda x: jnp.var(x, axis=0), "real"),
    "jnp.std": (lambda x: jnp.std(x, axis=1), "real"),
    "jnp.max": (lambda x: jnp.max(x, axis=1), "real"),
    "jnp.sort": (lambda x: jnp.sort(x, axis=1) * jnp.arange(1.0, 5.0, dtype=x.dtype), "real"),
    "jnp.diff": (lambda x: jnp.diff(x**2, axis=1), "real"),
    "jnp.flip": (lambda x: jnp.flip(x, axis=0) * jnp.cos(x), "real"),
    "jnp.roll": (lambda x: jnp.roll(x, 1, axis=1) * x, "real"),
    "jnp.tril": (lambda x: jnp.tril(jnp.exp(x)), "real"),
    "jnp.triu": (lambda x: jnp.triu(x) @ x, "real"),
    "jnp.transpose": (lambda x: x.T * x, "real"),
    "jnp.pad": (lambda x: jnp.pad(jnp.sin(x), 1), "real"),
    "jnp.polyval": (lambda x: jnp.polyval(jnp.array([0.5, -1.0, 2.0, 0.25], dtype=x.dtype), x), "real"),
    "jnp.linalg.norm": (lambda x: jnp.linalg.norm(x, axis=1), "real"),
    "jnp.linalg.det": (lambda x: jnp.linalg.det(_spd(x)), "real"),
    "jnp.linalg.slogdet": (lambda x: jnp.linalg.slogdet(_spd(x))[1], "real"),
    "jnp.linalg.inv": (lambda x: jnp.linalg.inv(_spd(x)), "real"),
    "jnp.linalg.pinv": (lambda x: jnp.linalg.pinv(_spd(x)), "real"),
    "jnp.linalg.cholesky": (lambda x: jnp.linalg.cholesky(_spd(x)), "real"),
    "jnp.linalg.eigvalsh": (lambda x: jnp.linalg.eigvalsh(_spd(x) + jnp.diag(jnp.arange(4.0, dtype=x.dtype))), "real"),
    "jnp.linalg.svd": (
        lambda x: jnp.linalg.svd(_spd(x) + jnp.diag(jnp.arange(4.0, dtype=x.dtype)), compute_uv=False),
        "real",
    ),
    "jnp.linalg.qr": (lambda x: jnp.abs(jnp.diag(jnp.linalg.qr(_spd(x))[1])), "real"),
    "jnp.linalg.matrix_power": (lambda x: jnp.linalg.matrix_power(x / 2.0, 3), "real"),
    "jnp.trace": (lambda x: jnp.trace(x @ x @ x), "real"),
    "jnp.fft.fft2": (lambda x: jnp.real(jnp.fft.fft2(x)) + jnp.imag(jnp.fft.fft2(x)) ** 2, "real"),
    "jnp.fft.rfft": (lambda x: jnp.abs(jnp.fft.rfft(x, axis=1) + 3.0), "real"),
    "jsl.expm": (lambda x: jsl.expm(x / 2.0), "real"),
    "jsl.solve_triangular": (lambda x: jsl.solve_triangular(_spd(x), jnp.ones(4, dtype=x.dtype), lower=False), "real"),
    "jss.erf": (jss.erf, "real"),
    "jss.erfc": (jss.erfc, "real"),
    "jss.erfinv": (jss.erfinv, "unit"),
    "jss.ndtr": (jss.ndtr, "real"),
    "jss.ndtri": (jss.ndtri, "prob"),
    "jss.log_ndtr": (jss.log_ndtr, "real"),
    "jss.logit": (jss.logit, "prob"),
    "jss.expit": (jss.expit, "real"),
    "jss.gammaln": (jss.gammaln, "positive"),
    "jss.digamma": (jss.digamma, "positive"),
    "jss.i0e": (jss.i0e, "positive"),
    "jss.i1e": (jss.i1e, "positive"),
    "jss.i0": (jss.i0, "real"),
    "jss.i1": (jss.i1, "real"),
    "jss.entr": (jss.entr, "positive"),
    "jss.logsumexp": (lambda x: jss.logsumexp(x, axis=1), "real"),
    "jss.softmax": (lambda x: jss.softmax(x, axis=0), "real"),
    "jax.nn.sigmoid": (jax.nn.sigmoid, "real"),
    "jax.nn.softplus": (jax.nn.softplus, "real"),
    "jax.nn.silu": (jax.nn.silu, "real"),
    "jax.nn.gelu": (jax.nn.gelu, "real"),
    "jax.nn.gelu(exact)": (lambda x: jax.nn.gelu(x, approximate=False), "real"),
    "jax.nn.elu": (jax.nn.elu, "positive"),
    "jax.nn.selu": (jax.nn.selu, "positive"),
    "jax.nn.celu": (jax.nn.celu, "positive"),
    "jax.nn.log_sigmoid": (jax.nn.log_sigmoid, "real"),
    "jax.nn.soft_sign": (jax.nn.soft_sign, "positive"),
    "jax.nn.mish": (jax.nn.mish, "real"),
    "jax.nn.squareplus": (jax.nn.squareplus, "real"),
    "jax.nn.glu": (jax.nn.glu, "real"),
    "jax.nn.softmax": (jax.nn.softmax, "real"),
    "jax.nn.log_softmax": (jax.nn.log_softmax, "real"),
    "jax.nn.standardize": (jax.nn.standardize, "real"),
    "lax.logistic": (lax.logistic, "real"),
    "lax.rsqrt": (lax.rsqrt, "positive"),
    "lax.integer_pow": (lambda x: lax.integer_pow(x, 5), "real"),
    "lax.lgamma": (lax.lgamma, "positive"),
    "lax.erf_inv": (lax.erf_inv, "unit"),
    "lax.cumlogsumexp": (lambda x: lax.cumlogsumexp(x, axis=1), "real"),
    "lax.cummax": (lambda x: lax.cummax(x, axis=0) * x, "real"),
    "lax.reduce_max": (lambda x: lax.reduce_max(x, axes=(0,)), "real"),
    "lax.dynamic_slice": (lambda x: lax.dynamic_slice(x, (1, 1), (2, 3)) ** 2, "real"),
    "lax.rev": (lambda x: lax.rev(x, (1,)) * x, "real"),
    "lax.sort": (lambda x: lax.sort(x.ravel()) * jnp.arange(16.0, dtype=x.dtype), "real"),
    "lax.top_k": (lambda x: lax.top_k(x, 2)[0] ** 2, "real"),
    "lax.clamp(inside)": (lambda x: lax.clamp(jnp.asarray(-5.0, x.dtype), x, jnp.asarray(5.0, x.dtype)) ** 3, "real"),
    "jnp.where(mask)": (lambda x: jnp.where(jnp.arange(16.0).reshape(4, 4) > 7, jnp.sin(x), jnp.cos(x)), "real"),
}

BINARY = {
    "jnp.add": (jnp.add, "real", "real"),
    "jnp.multiply": (jnp.multiply, "real", "real"),
    "jnp.divide": (jnp.divide, "real", "positive"),
    "jnp.power": (jnp.power, "positive", "real"),
    "jnp.arctan2": (jnp.arctan2, "positive", "positive"),
    "jnp.hypot": (jnp.hypot, "positive", "positive"),
    "jnp.logaddexp": (jnp.logaddexp, "real", "real"),
    "jnp.matmul": (jnp.matmul, "real", "real"),
    "jnp.kron": (jnp.kron, "real", "real"),
    "jnp.einsum": (lambda a, b: jnp.einsum("ij,jk,ki->i", a, b, a), "real", "real"),
    "jnp.tensordot": (lambda a, b: jnp.tensordot(a, b, axes=([1], [0])), "real", "real"),
    "jnp.outer": (lambda a, b: jnp.outer(a[0], b[:, 1]) * a, "real", "real"),
    "jnp.concatenate": (lambda a, b: jnp.concatenate([a * b, jnp.sin(a)]), "real", "real"),
    "jnp.stack": (lambda a, b: jnp.stack([a @ b, b]), "real", "real"),
    "jnp.linalg.solve": (lambda a, b: jnp.linalg.solve(_spd(a), b), "real", "real"),
    "jnp.convolve": (lambda a, b: jnp.convolve(a.ravel(), b[0]), "real", "real"),
    "jss.xlogy": (jss.xlogy, "real", "positive"),
    "jss.xlog1py": (jss.xlog1py, "real", "positive"),
    "jss.betaln": (jss.betaln, "positive", "positive"),
    "lax.atan2": (lax.atan2, "positive", "positive"),
    "lax.pow": (lax.pow, "positive", "real"),
    "lax.dot_general": (lambda a, b: lax.dot_general(a, b, (((0,), (1,)), ((), ()))), "real", "real"),
    "lax.conv": (_conv, "real", "real"),
    "softmax cross-entropy": (_cross_entropy, "real", "positive"),
    "rms norm": (_rms_norm, "real", "positive"),
    "eigh of sym": (
        lambda a, b: jnp.linalg.eigh(_symmetric(a) + jnp.diag(jnp.arange(4.0, dtype=a.dtype) * 3))[0] * b[0],
        "real",
        "real",
    ),
}

MODELS = {
    "layer norm": (_layer_norm, ((SQUARE, "real"), ((4,), "positive"), ((4,), "real"))),
    "attention head": (_attention, ((SQUARE, "real"), (SQUARE, "unit"), (SQUARE, "unit"), (SQUARE, "unit"))),
    "two-layer mlp": (_mlp, ((SQUARE, "real"), ((4, 5), "unit"), ((5,), "real"), ((5, 3), "unit"))),
    "gru cell": (_gru, ((SQUARE, "unit"), (SQUARE, "real"), (SQUARE, "unit"), (SQUARE, "unit"), (SQUARE, "unit"))),
}


def cases() -> list:
    """(name, fn, ((shape, domain), ...)) for every function, in a fixed order."""
    listed = [(name, fn, _unary(domain)) for name, (fn, domain) in UNARY.items()]
    listed += [(name, fn, _binary(first, second)) for name, (fn, first, second) in BINARY.items()]
    listed += [(name, fn, arguments) for name, (fn, arguments) in MODELS.items()]
    return listed


def arguments(index: int, shapes_and_domains, dtype) -> tuple:
    """The case's arguments: seeded by its index, drawn in float64 and rounded into ``dtype``."""
    rng = np.random.default_rng(index)
    drawn = []
    for shape, domain in shapes_and_domains:
        low, high = DOMAINS[domain]
        drawn.append(jnp.asarray(rng.uniform(low, high, size=shape), dtype=dtype))
    return tuple(drawn)
