"""JAX's own tests of custom rules, ported: each a right and a wrong rule, with the check_grads call that tells them apart.

The tests are ``tests/custom_api_test.py``'s CustomJVPTest and CustomVJPTest, ``tests/custom_root_test.py``
and ``tests/custom_linear_solve_test.py``. Where a test's rule is deliberately not the derivative (JAX tests
that a rule is *used*, ``2 * cos(x)`` for sin), that rule is the wrong one here and the derivative the right
one; where the test's rule is the derivative, the wrong one is a bug such code has (a missing term, a
transpose, a conjugate, a symmetric flag on a nonsymmetric matrix). ``order`` and ``modes`` are what
``jax.test_util.check_grads`` needs to pass the right rule and fail the wrong one (a forward rule inside
``lax.while_loop`` has no reverse mode and its bug is in its own derivative: ``order=2, modes=("fwd",)``),
recorded by running it with jax 0.6.2 in float64; gradcheck is asked the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import jax.scipy as jsp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.custom_derivatives import SymbolicZero  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

#: What check_grads does with each variant, the criterion every scenario was chosen and verified by.
EXPECTED = {"right": "passed", "wrong": "failed"}
JVP_MODES = ("fwd", "rev")
VJP_MODES = ("rev",)


@dataclass(frozen=True)
class Scenario:
    """One ported test: ``build(wrong)`` returns the function, ``inputs()`` its arguments (a tuple)."""

    name: str
    source: str
    feature: str
    build: Callable[[bool], Callable]
    inputs: Callable[[], tuple]
    order: int = 1
    modes: tuple = JVP_MODES
    tolerances: Mapping = field(default_factory=dict)
    #: What check_grads does with each variant, where it is not EXPECTED (a bug it cannot see).
    expected: Mapping = field(default_factory=lambda: EXPECTED)
    #: gradcheck's outcomes that agree besides check_grads', by variant (where issue 33 asks for more).
    accepts: Mapping = field(default_factory=dict)
    #: gradcheck's options beyond order and modes (batched, nondet_tol).
    extra: Mapping = field(default_factory=dict)

    def make(self, variant: str) -> tuple:
        """``(fn, inputs)`` for the ``"right"`` or ``"wrong"`` rule."""
        return self.build(variant == "wrong"), self.inputs()

    def peer(self, fn, inputs) -> None:
        """check_grads as the scenario needs it; raises AssertionError when it fails."""
        check_grads(fn, inputs, order=self.order, modes=self.modes, **self.tolerances)

    @property
    def options(self) -> dict:
        """What gradcheck is asked, in the API of issues 31 and 33."""
        return {"order": self.order, "modes": self.modes, **self.extra}


def array(shape, seed: int, low: float = -1.0, high: float = 1.0):
    """A seeded uniform float64 array in [low, high)."""
    return jnp.asarray(np.random.default_rng(seed).uniform(low, high, shape))


def complex_array(shape, seed: int):
    generator = np.random.default_rng(seed)
    return jnp.asarray(generator.normal(size=shape) * 0.5 + 0.5j * generator.normal(size=shape))


def precise_dot(a, b):
    return lax.dot(a, b, precision=lax.Precision.HIGHEST)


def jvp_rule(function, derivative):
    """``function`` as a custom_jvp whose rule is ``derivative(x) · t``."""
    wrapped = jax.custom_jvp(function)
    wrapped.defjvp(lambda primals, tangents: (wrapped(*primals), derivative(*primals) * tangents[0]))
    return wrapped


def vjp_rule(function, derivative):
    """``function`` as a custom_vjp whose backward is ``g · derivative(x)``."""
    wrapped = jax.custom_vjp(function)
    wrapped.defvjp(lambda x: (wrapped(x), x), lambda x, g: (g * derivative(x),))
    return wrapped


def sine_jvp(wrong: bool):
    """CustomJVPTest.test_basic's sin, whose test rule is 2·cos."""
    return jvp_rule(jnp.sin, lambda x: (2.0 if wrong else 1.0) * jnp.cos(x))


def sine_vjp(wrong: bool):
    return vjp_rule(jnp.sin, lambda x: (2.0 if wrong else 1.0) * jnp.cos(x))


# custom_jvp (CustomJVPTest): the rule is used by forward mode and, linearized and transposed, by reverse mode.


def invariance(wrong: bool):
    """cos(2x)/2, the test's rule 3·t."""
    return jvp_rule(lambda x: jnp.cos(2 * x) / 2.0, lambda x: 3.0 if wrong else -jnp.sin(2 * x))


def python_control_flow_jvp(wrong: bool):
    def function(x):
        return jnp.sin(x) if x > 0 else jnp.cos(x)

    def derivative(x):
        if wrong:
            return 2.0 if x > 0 else 3.0  # the test's rule
        return jnp.cos(x) if x > 0 else -jnp.sin(x)

    return jvp_rule(function, derivative)


def vmapped(build):
    """``jax.vmap`` of the scalar function ``build(wrong)`` (its rule asserts 0-d arguments)."""

    def make(wrong: bool):
        scalar = build(wrong)

        def checked(x):
            assert jnp.ndim(x) == 0
            return scalar(x)

        return jax.vmap(checked)

    return make


def jitted(build):
    return lambda wrong: jax.jit(build(wrong))


def pytree_jvp(wrong: bool):
    @jax.custom_jvp
    def f(x):
        return {"b": jnp.sin(x["a"]) * x["c"]}

    @f.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        da = (2.0 if wrong else 1.0) * jnp.cos(x["a"]) * x["c"] * t["a"]
        return f(x), {"b": da + jnp.sin(x["a"]) * t["c"]}

    return f


def keyword_jvp(wrong: bool):
    """test_kwargs: c·(x + y) called with c=2 by keyword; the bug drops ẏ."""

    @jax.custom_jvp
    def scaled_sum(x, y, c=1.0):
        return c * (x + y)

    @scaled_sum.defjvp
    def rule(primals, tangents):
        (x, y, c), (tx, ty, tc) = primals, tangents
        return scaled_sum(x, y, c), c * (tx + (0.0 if wrong else ty)) + tc * (x + y)

    return lambda x, y: jnp.square(scaled_sum(x, y, c=2.0)).sum()


def scanned(build, length: int = 1):
    """``build(wrong)`` applied ``length`` times in ``lax.scan`` (initial-style: a jaxpr inside a primitive)."""

    def make(wrong: bool):
        step = build(wrong)
        return lambda x: lax.scan(lambda carry, _: (step(carry), None), x, None, length=length)[0]

    return make


def triple_jvp(wrong: bool):
    """test_initial_style's 3x, whose test rule is 2·t."""
    return jvp_rule(lambda x: 3 * x, lambda x: 2.0 if wrong else 3.0)


def nondiff_function_jvp(wrong: bool):
    """test_nondiff_argnums: app(f, x) = f(x), f not differentiated; the test's rule is 3·t for f = 2x."""

    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    @app.defjvp
    def rule(f, primals, tangents):
        (x,), (t,) = primals, tangents
        return app(f, x), 3 * t if wrong else jax.jvp(f, (x,), (t,))[1]

    return lambda x: app(lambda y: 2 * y * y, x)


def expit_chain(wrong: bool):
    """test_multiple_rule_invocations: expit in a 10-step scan over 5 carries; the bug drops (1 - expit)."""

    @jax.custom_jvp
    def expit(x):
        return 1 / (1 + lax.exp(-x))

    @expit.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        value = expit(x)
        return value, t * value if wrong else t * value * (1 - value)

    def step(carry, _):
        return [expit(carry[0])] + [carry[i - 1] + carry[i] for i in range(1, len(carry))], None

    return lambda x: lax.scan(step, [x, *([jnp.zeros_like(x)] * 4)], None, length=10)[0][-1]


def relu_chain(wrong: bool):
    """test_hard_stuff3: relu in a scan; the bug lets the tangent through where x < 0 (leaky)."""

    @jax.custom_jvp
    def relu(x):
        return jnp.maximum(x, 0)

    @relu.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return relu(x), lax.select(x > 0, t, 0.5 * t if wrong else lax.full_like(t, 0))

    def step(carry, _):
        return [relu(carry[0])] + [carry[i - 1] + carry[i] for i in range(1, len(carry))], None

    return lambda x: lax.scan(step, [x, *([jnp.zeros_like(x)] * 4)], None, length=10)[0][-1]


def matvec_in_scan(wrong: bool):
    """test_jaxpr_zeros: A @ b with a rule, A constant, in a scan; the bug drops the A·db term."""

    @jax.custom_jvp
    def product(a, b):
        return a @ b

    @product.defjvp
    def rule(primals, tangents):
        (a, b), (da, db) = primals, tangents
        return product(a, b), da @ b if wrong else a @ db + da @ b

    def experiment(theta):
        def step(q, _):
            q = q + product(jnp.eye(3) * 2.0, jnp.ones(3) * theta)[0]
            return q, q

        return lax.scan(step, 0.0, None, 4)[0]

    return experiment


def negation_in_scan(wrong: bool):
    """test_linear_in_scan: -x whose rule is f(ẋ); the bug returns ẋ."""

    @jax.custom_jvp
    def negate(x):
        return -x

    negate.defjvp(lambda primals, tangents: (negate(*primals), tangents[0] if wrong else negate(tangents[0])))
    return scanned(lambda _: negate)(wrong)


def first_rule_none(wrong: bool):
    """test_custom_jvps_first_rule_is_none: x²y with defjvps(None, ...): x's derivative lost (the test's)."""

    @jax.custom_jvp
    def f(x, y):
        return x**2 * y

    x_rule = None if wrong else (lambda x_dot, out, x, y: 2 * x * y * x_dot)
    f.defjvps(x_rule, lambda y_dot, out, x, y: x**2 * y_dot)
    return f


def integer_argument_jvp(wrong: bool):
    """test_float0: (x, n) ↦ (x·n, n) with n an integer; the test's rule gives the constant tangent 2."""

    @jax.custom_jvp
    def f(x, n):
        return x * n, n

    @f.defjvp
    def rule(primals, tangents):
        (x, n), (t, _) = primals, tangents
        return f(x, n), (jnp.full_like(x, 2.0) if wrong else t * n, jax.custom_derivatives.zero_from_primal(n))

    return lambda x: f(x, jnp.array([1, 2, 3]))[0]


def rematerialized(build):
    """test_remat: ``jax.remat`` of f∘f."""

    def make(wrong: bool):
        f = build(wrong)
        return jax.remat(lambda x: f(f(x)))

    return make


def sine_with_cosine_jvp(second_scale: float, third_scale: float = 1.0):
    """sin whose rule calls cos's rule calls -sin's rule: each derivative a custom_jvp, scaled where wrong."""
    minus_sine = jvp_rule(lambda x: -jnp.sin(x), lambda x: -third_scale * jnp.cos(x))
    cosine = jvp_rule(jnp.cos, lambda x: second_scale * minus_sine(x))
    return jvp_rule(jnp.sin, cosine)


def wrong_second_derivative(wrong: bool):
    return sine_with_cosine_jvp(2.0 if wrong else 1.0)


def wrong_third_derivative(wrong: bool):
    return sine_with_cosine_jvp(1.0, 1.5 if wrong else 1.0)


def in_while_loop(wrong: bool):
    """The rule of wrong_second_derivative, three times inside ``lax.while_loop``: forward mode only."""
    f = wrong_second_derivative(wrong)

    def loop(x):
        return lax.while_loop(lambda state: state[0] < 3, lambda state: (state[0] + 1, f(state[1])), (0, x))[1]

    return loop


def simplex_projection(wrong: bool):
    """test_custom_jvp_implicit_broadcasting: projection onto the simplex; the bug drops the mean correction."""

    @jax.custom_jvp
    def project(x):
        u = jnp.sort(x)[::-1]
        cssv = jnp.cumsum(u) - 1.0
        index = jnp.arange(x.shape[0], dtype=x.dtype) + 1
        count = jnp.count_nonzero(u - cssv / index > 0)
        return jax.nn.relu(x - cssv[count - 1] / count.astype(x.dtype))

    @project.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        out = project(x)
        support = (out > 0).astype(t.dtype)
        correction = 0.0 if wrong else (jnp.dot(support, t) / jnp.count_nonzero(support).astype(t.dtype)) * support
        return out, support * t - correction

    return jax.vmap(project)


def symbolic_zero_jvp(wrong: bool):
    """defjvp(symbolic_zeros=True): y is not perturbed; the bug takes its symbolic zero tangent as ones."""

    @jax.custom_jvp
    def product(x, y):
        return x * y

    def rule(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        if type(ty) is SymbolicZero:
            ty = jnp.ones_like(y) if wrong else jnp.zeros_like(y)
        tx = jnp.zeros_like(x) if type(tx) is SymbolicZero else tx
        return product(x, y), tx * y + x * ty

    product.defjvp(rule, symbolic_zeros=True)
    y = array(3, 40)
    return lambda x: product(x, y)


def holomorphic_square_jvp(wrong: bool):
    """z² on complex inputs: the rule 2z·t; the bug conjugates, 2z̄·t."""
    return jvp_rule(lambda z: z * z, lambda z: jnp.conj(2 * z) if wrong else 2 * z)


# custom_vjp (CustomVJPTest): reverse mode only.


def invariance_vjp(wrong: bool):
    return vjp_rule(lambda x: jnp.cos(2 * x) / 2.0, lambda x: 3.0 if wrong else -jnp.sin(2 * x))


def pytree_vjp(wrong: bool):
    @jax.custom_vjp
    def f(x):
        return {"b": jnp.sin(x["a"]) * x["c"]}

    def backward(x, g):
        da = (2.0 if wrong else 1.0) * jnp.cos(x["a"]) * x["c"]
        return ({"a": g["b"] * da, "c": g["b"] * jnp.sin(x["a"])},)

    f.defvjp(lambda x: (f(x), x), backward)
    return f


def scanned_vjp(wrong: bool):
    """test_initial_style: 3x in a scan, whose test backward is 2·g."""
    return vjp_rule(lambda x: 3 * x, lambda x: 2.0 if wrong else 3.0)


def nondiff_function_vjp(wrong: bool):
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    def backward(f, x, g):
        return (3 * g,) if wrong else jax.vjp(f, x)[1](g)

    app.defvjp(lambda f, x: (app(f, x), x), backward)
    return lambda x: app(lambda y: 2 * y * y, x)


def closure_over_vmap_tracer(wrong: bool):
    """test_closure_with_vmap2: a custom_vjp defined under vmap, closing over the vmapped x."""

    def h(z):
        def f(x):
            @jax.custom_vjp
            def g(y):
                return x * y

            g.defvjp(lambda y: (x * y, x), lambda x, w_bar: ((2.0 if wrong else 1.0) * x * w_bar,))
            return g(z)

        return jax.vmap(f)(jnp.arange(1.0, 4.0)).sum()

    return h


def symbolic_zero_vjp(wrong: bool):
    """defvjp(symbolic_zeros=True), only the first output used; the bug takes the second's zero as ones."""

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x), jnp.cos(x)

    def forward(x):
        return f(x.value), x.value

    def backward(x, cotangents):
        g_sin, g_cos = cotangents
        if type(g_cos) is SymbolicZero:
            g_cos = jnp.ones_like(x) if wrong else jnp.zeros_like(x)
        return (g_sin * jnp.cos(x) - g_cos * jnp.sin(x),)

    f.defvjp(forward, backward, symbolic_zeros=True)
    return lambda x: f(x)[0]


def integer_argument_vjp(wrong: bool):
    """test_float0_bwd_none: f(i, x) = sin x with i an integer array, its cotangent None."""

    @jax.custom_vjp
    def f(i, x):
        return jnp.sin(x)

    f.defvjp(lambda i, x: (f(i, x), jnp.cos(x)), lambda cos_x, g: (None, (2.0 if wrong else 1.0) * cos_x * g))
    return lambda x: f(jnp.array([1, 2]), x)


def second_order_vjp(wrong: bool):
    """sin whose backward multiplies by a custom_vjp cos whose own backward is wrong: order 2 sees it."""
    cosine = vjp_rule(jnp.cos, lambda x: -(2.0 if wrong else 1.0) * jnp.sin(x))
    return vjp_rule(jnp.sin, cosine)


def none_cotangent(wrong: bool):
    """test_bwd_nones: x·sin y, whose test backward returns None for x."""

    @jax.custom_vjp
    def f(x, y):
        return x * jnp.sin(y)

    def backward(residuals, g):
        x, y = residuals
        return (None if wrong else g * jnp.sin(y), g * x * jnp.cos(y))

    f.defvjp(lambda x, y: (f(x, y), (x, y)), backward)
    return f


def none_cotangent_pytree(wrong: bool):
    """test_bwd_nones_pytree: (x1, x2), y ↦ x1·x2·sin y, whose test backward returns None for the pair."""

    @jax.custom_vjp
    def f(xs, y):
        return xs[0] * xs[1] * jnp.sin(y)

    def backward(residuals, g):
        (x1, x2), y = residuals
        pair = None if wrong else (g * x2 * jnp.sin(y), g * x1 * jnp.sin(y))
        return pair, g * x1 * x2 * jnp.cos(y)

    f.defvjp(lambda xs, y: (f(xs, y), (xs, y)), backward)
    return f


def custom_gradient(wrong: bool):
    """test_custom_gradient: x² with jax.custom_gradient, whose test vjp is g·x."""

    @jax.custom_gradient
    def f(x):
        return x**2, lambda g: (g * x * (1.0 if wrong else 2.0),)

    return f


def closure_converted(wrong: bool):
    """test_closure_convert: cos(fn(x)) with fn's closed-over c converted to an argument; the test's 17x, 42c."""

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def cos_after(fn, x, *args):
        return jnp.cos(fn(x, *args))

    def backward(fn, residuals, g):
        x, args = residuals
        if wrong:
            return (17.0 * x, *(42.0 * a for a in args))
        return jax.vjp(lambda x, *args: jnp.cos(fn(x, *args)), x, *args)[1](g)

    cos_after.defvjp(lambda fn, x, *args: (cos_after(fn, x, *args), (x, args)), backward)

    def solve(c, x):
        converted, constants = jax.closure_convert(lambda x: jnp.sum((x - c) ** 2.0), x)
        return cos_after(converted, x, *constants)

    return solve


def scan_over_mul(wrong: bool):
    """test_custom_vjp_scan_batching_edge_case: x·coeff in a scan, vmapped over x; the bug forgets coeff."""

    @jax.custom_vjp
    def mul(x, coeff):
        return x * coeff

    def backward(residuals, g):
        x, coeff = residuals
        return (g if wrong else g * coeff), (x * g).sum()

    mul.defvjp(lambda x, coeff: (mul(x, coeff), (x, coeff)), backward)

    def over(x, coeff):
        return lax.scan(lambda x, _: (mul(x, coeff), None), x, jnp.arange(3))[0]

    return jax.vmap(over, in_axes=(0, None), out_axes=0)


def holomorphic_square_vjp(wrong: bool):
    """z² on complex inputs: JAX's backward is g·2z (the transpose of the jvp); the bug conjugates."""
    return vjp_rule(lambda z: z * z, lambda z: jnp.conj(2 * z) if wrong else 2 * z)


def squared_modulus_vjp(wrong: bool):
    """|z|², real: JAX's backward is g·2z̄ (its gradient convention for C → R); the bug forgets the conj."""
    return vjp_rule(lambda z: jnp.real(z * jnp.conj(z)), lambda z: 2 * z if wrong else 2 * jnp.conj(z))


# lax.custom_root and lax.custom_linear_solve (custom_root_test.py, custom_linear_solve_test.py).


def binary_search(func, x0, low=0.0, high=100.0):
    """custom_root_test's solver: bisection in a lax.while_loop (no derivative of its own)."""
    del x0

    def cond(state):
        low, high = state
        midpoint = 0.5 * (low + high)
        return (low < midpoint) & (midpoint < high)

    def body(state):
        low, high = state
        midpoint = 0.5 * (low + high)
        update_upper = func(midpoint) > 0
        return jnp.where(update_upper, low, midpoint), jnp.where(update_upper, midpoint, high)

    return lax.while_loop(cond, body, (low, high))[0]


def newton_raphson(func, x0):
    """custom_root_test's solver: Newton steps in a lax.while_loop."""

    def cond(state):
        iteration, _, fx, _ = state
        return (jnp.max(jnp.abs(fx)) > 1e-16) & (iteration < 20)

    def body(state):
        iteration, x, fx, dfx = state
        step = jnp.linalg.solve(dfx.reshape((-1, fx.size)), fx.ravel()).reshape(fx.shape)
        x = x - step
        return iteration + 1, x, func(x), jax.jacobian(func)(x)

    return lax.while_loop(cond, body, (0, x0, func(x0), jax.jacobian(func)(x0)))[1]


def scalar_root(solver):
    """test_custom_root_scalar: √(x³) as the root of y² - x³; the bug multiplies by g(1) instead of dividing."""

    def make(wrong: bool):
        def tangent_solve(g, y):
            return y * g(1.0) if wrong else y / g(1.0)

        return lambda x: lax.custom_root(lambda y: y**2 - x**3, 1.0, solver, tangent_solve)

    return make


def root_of_linear_system(wrong: bool):
    """test_custom_root_vector_with_solve_closure: a·y = b through custom_root; the bug solves with Jᵀ."""

    def vector_solve(f, y):
        jacobian = jax.jacobian(f)(y)
        return jnp.linalg.solve(jacobian.T if wrong else jacobian, y)

    def linear_solve(a, b):
        solution = jnp.linalg.solve(a, b)
        return lax.custom_root(lambda y: precise_dot(a, y) - b, jnp.zeros_like(b), lambda f, x0: solution, vector_solve)

    return linear_solve


def nonlinear_root(wrong: bool):
    """test_custom_root_vector_nonlinear: the root of (x - y)(x² + y² + 1); the bug's tangent solve is the identity."""

    def tangent_solve(g, y):
        if wrong:
            return y
        return jnp.linalg.solve(jax.jacobian(g)(y).reshape(-1, y.size), y.ravel()).reshape(y.shape)

    def solve(y):
        return lax.custom_root(lambda x: (x - y) * (x**2 + y**2 + 1), -jnp.ones_like(y), newton_raphson, tangent_solve)

    return solve


def cholesky_root(has_aux: bool):
    """test_custom_root_with_custom_linear_solve (and _with_aux): a root found by cho_solve; the bug's tangent solve is b."""

    def make(wrong: bool):
        def linear_solve(x, b):
            a = precise_dot(x, x.T)
            factors = jsp.linalg.cho_factor(a)
            aux = {"converged": np.array(1.0), "nfev": np.array(12345.0)}

            def cho_solve(f, b):
                solution = jsp.linalg.cho_solve(factors, b)
                return (solution, aux) if has_aux else solution

            def tangent_solve(g, b):
                plain = (lambda f, b: cho_solve(f, b)[0]) if has_aux else cho_solve
                return b if wrong else lax.custom_linear_solve(g, b, plain, symmetric=True)

            return lax.custom_root(lambda y: precise_dot(a, y) - b, b, cho_solve, tangent_solve, has_aux=has_aux)

        return linear_solve

    return make


def explicit_jacobian_solve(matvec, b):
    return lax.stop_gradient(jnp.linalg.solve(jax.jacobian(matvec)(b), b))


def nonsymmetric_solve(wrong: bool):
    """test_custom_linear_solve: the bug declares a nonsymmetric matrix symmetric (reverse mode transposes wrong)."""

    def linear_solve(a, b):
        return lax.custom_linear_solve(
            partial(precise_dot, a), b, explicit_jacobian_solve, explicit_jacobian_solve, symmetric=wrong
        )

    return linear_solve


def richardson_solve(wrong: bool):
    """test_custom_linear_solve_iterative: Richardson iteration in a while_loop; the bug's transpose solve ignores its operator."""

    def richardson(matvec, b, omega=0.1, tolerance=1e-10):
        return lax.while_loop(
            lambda x: jnp.linalg.norm(matvec(x) - b) > tolerance, lambda x: x + omega * (b - matvec(x)), b
        )

    def build_and_solve(a, b):
        matvec = partial(precise_dot, jnp.exp(a))
        transpose_solve = (lambda _, b: richardson(matvec, b)) if wrong else richardson
        return lax.custom_linear_solve(matvec, jnp.cos(b), richardson, transpose_solve)

    return build_and_solve


def cholesky_solve(wrong: bool):
    """test_custom_linear_solve_cholesky: the bug closes over a stop_gradient of the matrix."""

    def positive_definite_solve(x, b):
        a = precise_dot(x, x.T)
        factors = jsp.linalg.cho_factor(a)
        matrix = lax.stop_gradient(a) if wrong else a
        return lax.custom_linear_solve(
            partial(precise_dot, matrix), b, lambda _, v: jsp.linalg.cho_solve(factors, v), symmetric=True
        )

    return positive_definite_solve


def complex_solve(wrong: bool):
    """test_custom_linear_solve_complex: the transpose solve is with aᵀ; the bug uses the conjugate transpose."""

    def solve(a, b):
        transposed = a.conj().T if wrong else a.T
        return lax.custom_linear_solve(
            partial(precise_dot, a),
            b,
            lambda _, x: jsp.linalg.solve(a, x),
            lambda _, x: jsp.linalg.solve(transposed, x),
        )

    return solve


def lu_solve(wrong: bool):
    """test_custom_linear_solve_lu: the bug's transpose solve reuses a's factors instead of aᵀ's."""

    def linear_solve(a, b):
        a_factors = jsp.linalg.lu_factor(a)
        transpose_factors = a_factors if wrong else jsp.linalg.lu_factor(a.T)
        return lax.custom_linear_solve(
            partial(precise_dot, a),
            b,
            lambda _, x: jsp.linalg.lu_solve(a_factors, x),
            lambda _, x: jsp.linalg.lu_solve(transpose_factors, x),
        )

    return linear_solve


def forward_only_solve(wrong: bool):
    """test_custom_linear_solve_without_transpose_solve: no transpose solve, so forward mode only."""

    def loss(a, b):
        matrix = lax.stop_gradient(a) if wrong else a
        return jnp.sum(lax.custom_linear_solve(partial(precise_dot, matrix), b, explicit_jacobian_solve))

    return loss


def rematerialized_solve(wrong: bool):
    """test_custom_linear_solve_new_remat: jax.checkpoint of a symmetric solve (the bug: symmetric=True on aᵀ ≠ a)."""
    return jax.checkpoint(nonsymmetric_solve(wrong))


# The scenarios; one entry each, as a table reads.

JVP_TEST = "custom_api_test.py::CustomJVPTest::"
VJP_TEST = "custom_api_test.py::CustomVJPTest::"
ROOT_TEST = "custom_root_test.py::"
SOLVE_TEST = "custom_linear_solve_test.py::"
POSITIVE = (0.3, 1.4)


def points():
    """The common input: four points in (0.3, 1.4)."""
    return (array(4, 1, *POSITIVE),)


def scalar():
    return (1.3,)


def matrix_and_vector():
    """A 3×3 matrix kept away from singular, and a vector."""
    return array((3, 3), 2) + 2.0 * jnp.eye(3), array(3, 3)


# The derivative calls themselves (issue 33): bugs check_grads cannot see, which gradcheck fails.


def noisy_vjp(wrong: bool):
    """sin whose custom_vjp backward multiplies by 1 + 1e-12·U(0, 1), drawn anew at each call (outside jit)."""
    generator = np.random.default_rng(0)
    noise = 1e-12 if wrong else 0.0
    return vjp_rule(jnp.sin, lambda x: jnp.cos(x) * (1.0 + noise * generator.random(np.shape(x))))


def guarded_vjp(wrong: bool):
    """sin whose custom_vjp backward clips huge gradients through a Python float: broken under vmap."""

    @jax.custom_vjp
    def sine(x):
        return jnp.sin(x)

    def backward(x, g):
        if wrong and float(jnp.max(jnp.abs(g))) > 1e6:
            g = jnp.clip(g, -1e6, 1e6)
        return (jnp.cos(x) * g,)

    sine.defvjp(lambda x: (jnp.sin(x), x), backward)
    return sine


def vmap_rule_vjp(wrong: bool):
    """sin whose custom_vjp backward doubles cos·g/2 through a custom_vmap rule that forgets the 2 when wrong."""

    @jax.custom_batching.custom_vmap
    def double(y):
        return 2.0 * y

    @double.def_vmap
    def rule(axis_size, in_batched, y):
        return (y if wrong else 2.0 * y), in_batched[0]

    @jax.custom_vjp
    def sine(x):
        return jnp.sin(x)

    sine.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (double(jnp.cos(x) * g / 2.0),))
    return sine


ISSUE = "issue 33: "
UNSEEN = {"right": "passed", "wrong": "passed"}  # check_grads calls the vjp once, and never under vmap
FAILS_THE_WRONG = {"wrong": ("failed",)}

# fmt: off
CUSTOM_JVP = [
    Scenario("sin", JVP_TEST + "test_basic", "first order", sine_jvp, points),
    Scenario("cos(2x)/2", JVP_TEST + "test_invariance", "first order", invariance, points),
    Scenario("Python control flow", JVP_TEST + "test_python_control_flow", "first order", python_control_flow_jvp, scalar),
    Scenario("vmap of a scalar rule", JVP_TEST + "test_vmap", "vmap", vmapped(sine_jvp), points),
    Scenario("jit", JVP_TEST + "test_jit", "jit", jitted(sine_jvp), points),
    Scenario("dict in, dict out", JVP_TEST + "test_pytrees", "pytrees", pytree_jvp,
             lambda: ({"a": array(3, 4), "c": array(3, 5)},)),
    Scenario("keyword argument", JVP_TEST + "test_kwargs", "first order", keyword_jvp, lambda: (array(3, 6), array(3, 7))),
    Scenario("3x in a scan", JVP_TEST + "test_initial_style", "scan", scanned(triple_jvp), points),
    Scenario("vmap of a scan", JVP_TEST + "test_initial_style_vmap", "vmap", lambda wrong: jax.vmap(scanned(triple_jvp)(wrong)), points),
    Scenario("nondiff_argnums: a function argument", JVP_TEST + "test_nondiff_argnums", "nondiff_argnums",
             nondiff_function_jvp, points),
    Scenario("expit, 10 steps of a 5-carry scan", JVP_TEST + "test_multiple_rule_invocations", "scan", expit_chain, points),
    Scenario("relu in a scan", JVP_TEST + "test_hard_stuff3", "scan", relu_chain, lambda: (array(4, 8, 0.2, 1.0) * jnp.array([1, -1, 1, -1]),)),
    Scenario("A @ b in a scan, A constant", JVP_TEST + "test_jaxpr_zeros", "scan", matvec_in_scan, scalar),
    Scenario("-x in a scan", JVP_TEST + "test_linear_in_scan", "scan", negation_in_scan, points),
    Scenario("defjvps(None, rule)", JVP_TEST + "test_custom_jvps_first_rule_is_none", "first order", first_rule_none,
             lambda: (array(3, 9, *POSITIVE), array(3, 10, *POSITIVE))),
    Scenario("integer argument (float0 tangent)", JVP_TEST + "test_float0", "float0 and integer inputs",
             integer_argument_jvp, lambda: (array(3, 11),)),
    Scenario("remat of f∘f", JVP_TEST + "test_remat", "remat", rematerialized(sine_jvp), points),
    Scenario("remat, second order", JVP_TEST + "test_remat_higher_order", "second order",
             rematerialized(wrong_second_derivative), points, order=2),
    Scenario("simplex projection under vmap", JVP_TEST + "test_custom_jvp_implicit_broadcasting", "vmap",
             simplex_projection, lambda: (array((4, 5), 12, 0.0, 1.0),)),
    Scenario("symbolic zero tangent", JVP_TEST + "test_symbolic_zeros", "symbolic zeros", symbolic_zero_jvp,
             lambda: (array(3, 13),)),
    Scenario("z², complex", "custom_jvp on complex inputs", "complex inputs (Wirtinger)", holomorphic_square_jvp,
             lambda: (complex_array(3, 14),)),
    Scenario("sin, wrong second derivative", "custom_jvp of a custom_jvp", "second order", wrong_second_derivative, points,
             order=2),
    Scenario("sin, wrong third derivative", "custom_jvp of a custom_jvp of a custom_jvp", "third order",
             wrong_third_derivative, points, order=3),
    Scenario("rule inside lax.while_loop", "lax_control_flow_test.py: check_grads(order=2, modes=['fwd'])",
             "forward-over-forward", in_while_loop, points, order=2, modes=("fwd",)),
]

CUSTOM_VJP = [
    Scenario("sin", VJP_TEST + "test_basic", "first order", sine_vjp, points, modes=VJP_MODES),
    Scenario("cos(2x)/2", VJP_TEST + "test_invariance", "first order", invariance_vjp, points, modes=VJP_MODES),
    Scenario("vmap of a scalar rule", VJP_TEST + "test_vmap", "vmap", vmapped(sine_vjp), points, modes=VJP_MODES),
    Scenario("jit", VJP_TEST + "test_jit", "jit", jitted(sine_vjp), points, modes=VJP_MODES),
    Scenario("dict in, dict out", VJP_TEST + "test_pytrees", "pytrees", pytree_vjp,
             lambda: ({"a": array(3, 4), "c": array(3, 5)},), modes=VJP_MODES),
    Scenario("3x in a scan", VJP_TEST + "test_initial_style", "scan", scanned(scanned_vjp), points, modes=VJP_MODES),
    Scenario("nondiff_argnums: a function argument", VJP_TEST + "test_nondiff_argnums", "nondiff_argnums",
             nondiff_function_vjp, points, modes=VJP_MODES),
    Scenario("closure over a vmap tracer", VJP_TEST + "test_closure_with_vmap2", "vmap", closure_over_vmap_tracer,
             scalar, modes=VJP_MODES),
    Scenario("symbolic zero cotangent", VJP_TEST + "test_symbolic_zero_custom_vjp_basic", "symbolic zeros",
             symbolic_zero_vjp, points, modes=VJP_MODES),
    Scenario("integer argument, None cotangent", VJP_TEST + "test_float0_bwd_none", "float0 and integer inputs",
             integer_argument_vjp, points, modes=VJP_MODES),
    Scenario("remat of f∘f", VJP_TEST + "test_remat", "remat", rematerialized(sine_vjp), points, modes=VJP_MODES),
    Scenario("backward of a custom_vjp, second order", VJP_TEST + "test_remat_higher_order", "second order",
             second_order_vjp, points, order=2, modes=VJP_MODES),
    Scenario("None for a cotangent", VJP_TEST + "test_bwd_nones", "None cotangents", none_cotangent,
             lambda: (array(3, 15), array(3, 16)), modes=VJP_MODES),
    Scenario("None for a pytree's cotangent", VJP_TEST + "test_bwd_nones_pytree", "None cotangents",
             none_cotangent_pytree, lambda: ((array(3, 17), array(3, 18)), array(3, 19)), modes=VJP_MODES),
    Scenario("jax.custom_gradient", VJP_TEST + "test_custom_gradient", "custom_gradient", custom_gradient, points,
             modes=VJP_MODES),
    Scenario("closure_convert", VJP_TEST + "test_closure_convert", "closure_convert", closure_converted,
             lambda: (array(2, 20), array(2, 21)), modes=VJP_MODES),
    Scenario("vmap of a scan of a custom_vjp", VJP_TEST + "test_custom_vjp_scan_batching_edge_case", "vmap",
             scan_over_mul, lambda: (array((3, 2), 22), 1.5), order=2, modes=VJP_MODES),
    Scenario("z², complex", "custom_vjp on complex inputs", "complex inputs (Wirtinger)", holomorphic_square_vjp,
             lambda: (complex_array(3, 23),), modes=VJP_MODES),
    Scenario("|z|², complex to real", "custom_vjp on complex inputs", "complex inputs (Wirtinger)", squared_modulus_vjp,
             lambda: (complex_array(3, 24),), modes=VJP_MODES),
]

SOLVERS = [
    Scenario("√(x³) by bisection", ROOT_TEST + "test_custom_root_scalar", "custom_root", scalar_root(binary_search),
             lambda: (5.0,)),
    Scenario("√(x³) by Newton", ROOT_TEST + "test_custom_root_scalar", "custom_root", scalar_root(newton_raphson),
             lambda: (5.0,)),
    Scenario("a·y = b as a root", ROOT_TEST + "test_custom_root_vector_with_solve_closure", "custom_root",
             root_of_linear_system, matrix_and_vector),
    Scenario("nonlinear root", ROOT_TEST + "test_custom_root_vector_nonlinear", "custom_root", nonlinear_root,
             lambda: (array((3, 1), 25),)),
    Scenario("root by cho_solve", ROOT_TEST + "test_custom_root_with_custom_linear_solve", "custom_root",
             cholesky_root(False), matrix_and_vector),
    Scenario("root by cho_solve, with aux", ROOT_TEST + "test_custom_root_with_aux", "custom_root", cholesky_root(True),
             matrix_and_vector),
    Scenario("nonsymmetric solve", SOLVE_TEST + "test_custom_linear_solve", "custom_linear_solve", nonsymmetric_solve,
             matrix_and_vector),
    Scenario("Richardson iteration", SOLVE_TEST + "test_custom_linear_solve_iterative", "custom_linear_solve",
             richardson_solve, lambda: (array((2, 2), 26) - 1.0, array(2, 27))),
    Scenario("positive definite solve", SOLVE_TEST + "test_custom_linear_solve_cholesky", "custom_linear_solve",
             cholesky_solve, matrix_and_vector),
    Scenario("complex solve", SOLVE_TEST + "test_custom_linear_solve_complex", "complex inputs (Wirtinger)",
             complex_solve, lambda: (complex_array((2, 2), 28) + 2.0 * jnp.eye(2), complex_array(2, 29)),
             modes=VJP_MODES),
    Scenario("LU solve", SOLVE_TEST + "test_custom_linear_solve_lu", "custom_linear_solve", lu_solve, matrix_and_vector),
    Scenario("solve without a transpose solve", SOLVE_TEST + "test_custom_linear_solve_without_transpose_solve",
             "forward-over-forward", forward_only_solve, matrix_and_vector, order=2, modes=("fwd",)),
    Scenario("checkpointed solve", SOLVE_TEST + "test_custom_linear_solve_new_remat", "remat", rematerialized_solve,
             matrix_and_vector, modes=VJP_MODES),
]

DERIVATIVE_CALLS = [
    Scenario("custom_vjp backward with 1e-12 noise", ISSUE + "a nondeterministic backward", "nondeterministic backward",
             noisy_vjp, points, modes=VJP_MODES, expected=UNSEEN, accepts=FAILS_THE_WRONG),
    Scenario("custom_vjp backward through a float(), batched", ISSUE + "batched gradients",
             "batched gradients (vmap)", guarded_vjp, points, modes=VJP_MODES, expected=UNSEEN,
             accepts=FAILS_THE_WRONG, extra={"batched": True}),
    Scenario("custom_vjp backward through a wrong custom_vmap rule, batched", ISSUE + "batched gradients",
             "batched gradients (vmap)", vmap_rule_vjp, points, modes=VJP_MODES, expected=UNSEEN,
             accepts=FAILS_THE_WRONG, extra={"batched": True}),
]
# fmt: on

SCENARIOS = (*CUSTOM_JVP, *CUSTOM_VJP, *SOLVERS, *DERIVATIVE_CALLS)
