"""Real, publicly reported mistakes in JAX derivative rules (custom_vjp, custom_jvp), each rebuilt small.

Every builder returns ``(fn, args)``: ``fn(*args)`` as reported (``buggy=True``) or as fixed, its
arguments numpy arrays of the case's dtype, checked under the names of ``fn``'s parameters.
Cases with ``order=2`` are mistakes in the second derivative (vjp of vjp). Each is our own
minimal reconstruction of the mistake named in ``mistake``, not the reporter's code. Importing
this module imports JAX and turns on float64 (``jax_enable_x64``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from _realbugs_case import RealBug

jax.config.update("jax_enable_x64", True)


def _array(values, dtype):
    return np.asarray(values, dtype=dtype)


def _sin_times(buggy):
    @jax.custom_vjp
    def f(x, y):
        return jnp.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (jnp.cos(x), jnp.sin(x), y)

    def f_bwd(residuals, g):
        cos_x, sin_x, y = residuals
        return cos_x * g * y, (-sin_x if buggy else sin_x) * g  # df/dy = sin(x), written −sin(x)

    f.defvjp(f_fwd, f_bwd)
    return f


def custom_vjp_sign_of_dy(dtype, rng, buggy):
    f = _sin_times(buggy)

    def fn(x, y):
        return f(x, y)

    return fn, (_array(rng.normal(size=6), dtype), _array(rng.normal(size=6), dtype))


def _cross_entropy(h, w, targets):
    logits = h @ w
    return jnp.mean(jax.nn.logsumexp(logits, axis=1) - jnp.take_along_axis(logits, targets[:, None], axis=1)[:, 0])


def custom_vjp_hidden_gradient_missing_cotangent(dtype, rng, buggy):
    targets = jnp.asarray(rng.integers(0, 6, size=5))

    @jax.custom_vjp
    def loss(h, w):
        return _cross_entropy(h, w, targets)

    def loss_fwd(h, w):
        value, pullback = jax.vjp(lambda h, w: _cross_entropy(h, w, targets), h, w)
        return value, pullback

    def loss_bwd(pullback, g):
        dh, dw = pullback(jnp.ones_like(g))  # the vjp taken with a seed of 1
        return (dh if buggy else g * dh), g * dw  # the loss cotangent applied to dw only

    loss.defvjp(loss_fwd, loss_bwd)

    def fn(h, w):
        return loss(h, w)

    return fn, (_array(rng.normal(size=(5, 4)), dtype), _array(0.5 * rng.normal(size=(4, 6)), dtype))


def nested_custom_vjp_drops_residual_cotangent(dtype, rng, buggy):
    @jax.custom_vjp
    def cube(x):
        return x**3

    def cube_fwd(x):
        return cube(x), (x,)

    @jax.custom_vjp
    def cube_bwd(saved, dy):
        (x,) = saved
        return (3 * x**2 * dy,)

    def cube_bwd_fwd(saved, dy):
        return cube_bwd(saved, dy), (saved, dy)

    def cube_bwd_bwd(residuals, ddx):
        ((x,), dy), (ddx,) = residuals, ddx
        dsaved = (None,) if buggy else (6 * x * dy * ddx,)  # None: "we don't want to diff through saved"
        return dsaved, 3 * x**2 * ddx

    cube_bwd.defvjp(cube_bwd_fwd, cube_bwd_bwd)
    cube.defvjp(cube_fwd, cube_bwd)

    def fn(x):
        return cube(x)

    return fn, (_array(rng.normal(size=6), dtype),)


def _bisection_root(theta):
    """The x with x³ + x = θ, by bisection on [−10, 10]: right values, zero derivative."""

    def body(_, bracket):
        low, high = bracket
        middle = (low + high) / 2
        above = middle**3 + middle > theta
        return jnp.where(above, low, middle), jnp.where(above, middle, high)

    low, high = jax.lax.fori_loop(0, 80, body, (jnp.full_like(theta, -10.0), jnp.full_like(theta, 10.0)))
    return (low + high) / 2


def implicit_root_second_derivative_zero(dtype, rng, buggy):
    @jax.custom_vjp
    def root(theta):
        return _bisection_root(theta)

    def root_fwd(theta):
        x = _bisection_root(theta)
        if not buggy:  # one Newton step on a stopped root: same value, the implicit derivative
            x = jax.lax.stop_gradient(x)
            x = x - (x**3 + x - theta) / (3 * x**2 + 1)
        return x, x

    def root_bwd(x, g):
        return (g / (3 * x**2 + 1),)

    root.defvjp(root_fwd, root_bwd)

    def fn(theta):
        return root(theta)

    return fn, (_array(rng.uniform(-3.0, 3.0, size=5), dtype),)


def _sinc(buggy):
    @jax.custom_jvp
    def sinc(x):
        safe = jnp.where(x == 0, 1.0, x)
        return jnp.where(x == 0, 1.0, jnp.sin(math.pi * safe) / (math.pi * safe))

    @sinc.defjvp
    def sinc_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        safe = jnp.where(x == 0, 1.0, x)
        slope = (jnp.cos(math.pi * safe) - sinc(safe)) / safe
        if buggy:  # the point x = 0 patched with its value 0 only: its derivative is lost
            slope = jnp.where(x == 0, 0.0, slope)
        else:
            near = jnp.abs(x) < 1e-3
            series = -(math.pi**2) * x / 3 + math.pi**4 * x**3 / 30
            slope = jnp.where(near, series, slope)
        return sinc(x), slope * t

    return sinc


def sinc_second_derivative_at_zero(dtype, rng, buggy):
    sinc = _sinc(buggy)

    def fn(x):
        return sinc(x)

    values = rng.uniform(-2.0, 2.0, size=6)
    values[2] = 0.0
    return fn, (_array(values, dtype),)


def logsumexp_weights_masked_at_zero(dtype, rng, buggy):
    def fn(a, b):
        top = jnp.max(a, axis=1, keepdims=True)
        if buggy:  # b == 0 masked out with where: no derivative with respect to those weights
            terms = jnp.where(b != 0, jnp.where(b != 0, b, 1.0) * jnp.exp(a - top), 0.0)
        else:
            terms = b * jnp.exp(a - top)
        return jnp.log(jnp.sum(terms, axis=1)) + top[:, 0]

    weights = rng.uniform(0.5, 1.5, size=(4, 6))
    weights[0, 2] = weights[3, 4] = 0.0
    return fn, (_array(rng.normal(size=(4, 6)), dtype), _array(weights, dtype))


def _upper_solve(buggy):
    @jax.custom_jvp
    def solve(a, b):
        return solve_triangular(a, b, lower=False)

    @solve.defjvp
    def solve_jvp(primals, tangents):
        (a, b), (da, db) = primals, tangents
        x = solve(a, b)
        used = da if buggy else jnp.triu(da)  # the forward reads the upper triangle only
        return x, solve(a, db - used @ x)

    return solve


def triangular_solve_jvp_without_triu(dtype, rng, buggy):
    solve = _upper_solve(buggy)

    def fn(a, b):
        return solve(a, b)

    matrix = np.triu(0.5 * rng.normal(size=(4, 4))) + 2 * np.eye(4) + np.tril(rng.normal(size=(4, 4)), -1)
    return fn, (_array(matrix, dtype), _array(rng.normal(size=4), dtype))


def _custom_gradient_square(buggy):
    @jax.custom_gradient
    def square(x):
        return x**2, lambda g: (g * x if buggy else g * 2 * x,)  # the docstring's example: g·x

    return square


def custom_gradient_square_missing_two(dtype, rng, buggy):
    square = _custom_gradient_square(buggy)

    def fn(x):
        return jax.vmap(square)(x)

    return fn, (_array(rng.normal(size=6), dtype),)


CASES = [
    RealBug(
        "custom_vjp_sign_of_dy",
        "jax",
        "https://github.com/jax-ml/jax/issues/3213",
        "f(x, y) = sin(x)·y with df/dy written −sin(x) in the custom_jvp/custom_vjp docs' rules",
        ("y",),
        ("sign",),
        custom_vjp_sign_of_dy,
        factor=-1.0,
    ),
    RealBug(
        "custom_vjp_hidden_gradient_missing_cotangent",
        "jax",
        "https://github.com/AI-Hypercomputer/maxtext/pull/4959",
        "a loss custom_vjp (vjp seeded with 1) applies the incoming cotangent to the head's gradient, not the hidden state's",
        ("h",),
        ("scale",),
        custom_vjp_hidden_gradient_missing_cotangent,
    ),
    RealBug(
        "nested_custom_vjp_drops_residual_cotangent",
        "jax",
        "https://github.com/jax-ml/jax/issues/21220",
        "a custom_vjp backward with its own custom_vjp returns None for the residual x: the Hessian-vector product is 0",
        ("x",),
        ("zero",),
        nested_custom_vjp_drops_residual_cotangent,
        order=2,
    ),
    RealBug(
        "implicit_root_second_derivative_zero",
        "jax",
        "https://github.com/google/jaxopt/issues/141",
        "custom_vjp root finder: the second derivative goes through bisection, whose derivative is 0",
        ("theta",),
        ("zero",),
        implicit_root_second_derivative_zero,
        order=2,
    ),
    RealBug(
        "sinc_second_derivative_at_zero",
        "jax",
        "https://github.com/jax-ml/jax/issues/5054",
        "sinc's derivative rule patches x = 0 with a constant: the second derivative there is 0, not −π²/3",
        ("x",),
        ("localized", "zero"),
        sinc_second_derivative_at_zero,
        order=2,
    ),
    RealBug(
        "logsumexp_weights_masked_at_zero",
        "jax",
        "https://github.com/jax-ml/jax/issues/22398",
        "logsumexp with weights b masks b == 0 by where: the gradient with respect to those weights is 0",
        ("b",),
        ("localized", "zero"),
        logsumexp_weights_masked_at_zero,
    ),
    RealBug(
        "triangular_solve_jvp_without_triu",
        "jax",
        "https://github.com/ekzhang/jax-js/issues/84 (and jax-ml/jax#1458)",
        "triangular-solve JVP uses dA where triu(dA) belongs: gradient on the lower triangle the forward never reads",
        ("a",),
        (),
        triangular_solve_jvp_without_triu,
    ),
    RealBug(
        "custom_gradient_square_missing_two",
        "jax",
        "https://github.com/jax-ml/jax/pull/29485",
        "jax.custom_gradient's documented example x² returns the gradient g·x: the 2 of d(x²) = 2x left out",
        ("x",),
        ("scale",),
        custom_gradient_square_missing_two,
        factor=0.5,
    ),
]
