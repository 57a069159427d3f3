"""gradcheck_cli.jax: JAX code checked directly, over pytrees, in float64, float32 and bfloat16.

Every deliberate bug below is a classic one, each with its correct version: a custom_vjp backward
doubled or transposed, a custom_jvp rule with a sign error, a pytree model whose one leaf gradient
is wrong, and a backward that is right but not differentiable correctly (order=2). Where a bug
reaches is worked out by hand beside each; the peer for the correct versions is jax.vjp itself.
"""

import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from extras import require

jax = require("jax")
jnp = pytest.importorskip("jax.numpy")

from click.testing import CliRunner  # noqa: E402

from gradcheck_cli.cli import main  # noqa: E402
from gradcheck_cli.errors import (  # noqa: E402
    InvalidArgument,
    InvalidCall,
    UnknownOption,
    UnsupportedJaxInput,
    X64Disabled,
)
from gradcheck_cli.jax import assert_gradients, check_function, function_problem, jax_problem  # noqa: E402

DTYPES = ["float64", "float32"]


@pytest.fixture(autouse=True)
def x64():
    """x64 on for each test (float64 in float64), and JAX's setting as it was afterwards."""
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


def points(shape, dtype, offset=0.0):
    count = int(np.prod(shape))
    return jnp.asarray(np.linspace(-1.3, 1.1, count).reshape(shape) + offset, dtype=dtype)


def scaled_sine(factor):
    """sin with a custom_vjp whose backward is ``factor``·cos·g (1 is right)."""

    @jax.custom_vjp
    def sine(x):
        return jnp.sin(x)

    sine.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (factor * jnp.cos(x) * g,))
    return sine


def stopped_sine():
    """sin whose custom_vjp backward is right in value but not differentiable correctly: cos(stop_gradient(x))
    loses the second derivative −sin(x)·g, so the second order fails at x and the first passes."""

    @jax.custom_vjp
    def sine(x):
        return jnp.sin(x)

    sine.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(jax.lax.stop_gradient(x)) * g,))
    return sine


def matvec(transposed):
    """W @ x with a custom_vjp; the wrong backward returns ∂/∂W transposed, outer(x, g) for outer(g, x)."""

    @jax.custom_vjp
    def product(w, x):
        return w @ x

    def backward(saved, g):
        w, x = saved
        dw = jnp.outer(x, g) if transposed else jnp.outer(g, x)
        return dw, w.T @ g

    product.defvjp(lambda w, x: (w @ x, (w, x)), backward)
    return product


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_custom_vjp_backward_doubled_fails_naming_its_input_and_the_right_one_passes(dtype):
    x = points((3, 4), dtype)
    assert check_function(scaled_sine(1.0), (x,)).passed
    report = check_function(scaled_sine(2.0), (x,))
    assert report.verdict == "failed" and report.failing_parameters == ("x",)
    # analytic/numerical is exactly the factor 2 (up to the difference's own error).
    ratios = [r.comparison.analytic / r.comparison.numerical for r in report.parameter("x").checks]
    assert np.allclose(ratios, 2.0, rtol=1e-2 if dtype == "float32" else 1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_custom_vjp_backward_transposed_fails_naming_w_only(dtype):
    w, x = points((3, 3), dtype, 0.3), points((3,), dtype, -0.2)
    assert check_function(matvec(False), (w, x)).passed
    report = check_function(matvec(True), (w, x))
    # x's gradient Wᵀg is right; W's is outer(x, g) in place of outer(g, x): wrong off the diagonal.
    assert report.failing_parameters == ("w",)
    assert report.parameter("x").passed


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_custom_jvp_rule_with_a_sign_error_fails_naming_its_input(dtype):
    def tanh_rule(sign):
        @jax.custom_jvp
        def tanh(x, y):
            return jnp.tanh(x) * y

        @tanh.defjvp
        def rule(primals, tangents):
            x, y = primals
            dx, dy = tangents
            t = jnp.tanh(x)
            return t * y, sign * (1 - t * t) * y * dx + t * dy

        return tanh

    x, y = points((5,), dtype), points((5,), dtype, 0.5)
    assert check_function(tanh_rule(1.0), (x, y), modes=("fwd",)).passed
    report = check_function(tanh_rule(-1.0), (x, y), modes=("fwd",))
    # The sign error is in the dx term only: the tangent along y is right.
    assert report.failing_parameters == ("x",) and report.parameter("y").passed
    # Reverse mode transposes the same rule, so the vjp fails at x too.
    assert check_function(tanh_rule(-1.0), (x, y)).failing_parameters == ("x",)


def two_layer(wrong_bias):
    """tanh(x W1 + b1) W2 + b2; with ``wrong_bias`` the second layer's custom_vjp sums b2's gradient over
    the features instead of the batch (every entry the row-sum of g)."""

    @jax.custom_vjp
    def dense(h, w, b):
        return h @ w + b

    def backward(saved, g):
        h, w = saved
        db = jnp.full_like(g[0], jnp.sum(g)) / g.shape[1] if wrong_bias else jnp.sum(g, axis=0)
        return g @ w.T, h.T @ g, db

    dense.defvjp(lambda h, w, b: (h @ w + b, (h, w)), backward)

    def model(params, x):
        hidden = jnp.tanh(x @ params["layer1"]["kernel"] + params["layer1"]["bias"])
        return dense(hidden, params["layer2"]["kernel"], params["layer2"]["bias"])

    return model


def parameters(dtype):
    return {
        "layer1": {"kernel": points((4, 5), dtype, 0.1), "bias": points((5,), dtype, 0.2)},
        "layer2": {"kernel": points((5, 3), dtype, -0.1), "bias": points((3,), dtype)},
    }


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_pytree_models_wrong_leaf_is_named_by_its_path(dtype):
    params, x = parameters(dtype), points((6, 4), dtype)
    report = check_function(lambda params: two_layer(False)(params, x), (params,))  # x closed over: not checked
    assert report.passed
    names = ["params['layer1']['bias']", "params['layer1']['kernel']", "params['layer2']['bias']"]
    assert [check.name for check in report.parameters] == [*names, "params['layer2']['kernel']"]
    report = check_function(lambda params: two_layer(True)(params, x), (params,))
    assert report.failing_parameters == ("params['layer2']['bias']",)


def test_jitted_functions_and_every_argument_by_default():
    params, x = parameters("float64"), points((6, 4), "float64")
    report = check_function(jax.jit(two_layer(True)), (params, x))
    assert report.failing_parameters == ("params['layer2']['bias']",)
    assert report.parameter("x").passed  # the input's gradient g Wᵀ is right


def test_bfloat16_is_probed_in_bfloat16():
    x = points((8,), jnp.bfloat16)
    report = check_function(jnp.tanh, (x,))
    assert report.passed and report.parameters[0].dtype == "bfloat16"
    assert check_function(scaled_sine(2.0), (x,)).failing_parameters == ("x",)


def test_x64_off_refuses_float64_with_the_line_that_enables_it():
    jax.config.update("jax_enable_x64", False)
    with pytest.raises(X64Disabled) as raised:
        check_function(lambda params: jnp.sum(params["w"] ** 2), ({"w": np.ones(3)},))
    assert str(raised.value) == (
        "input \"params['w']\" is float64, but JAX computes it in float32 with x64 off (its default): "
        "run jax.config.update('jax_enable_x64', True) first, or pass float32 inputs"
    )
    assert check_function(jnp.tanh, (np.ones(3, dtype=np.float32),)).passed  # float32 is its own arithmetic


def test_nothing_of_the_users_is_modified():
    w = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    before = w.copy()
    w.flags.writeable = False  # read-only input arrays are fine: the probes go to copies
    problem = function_problem(lambda w: jnp.sin(w) * 3.0, (w,))
    assert problem.parameters["w"] is not w and problem.parameters["w"].flags.writeable
    assert check_function(lambda w: jnp.sin(w) * 3.0, (w,), samples="all").passed
    assert np.array_equal(w.view(np.int64), before.view(np.int64)) and not w.flags.writeable


def test_order_2_checks_the_vjp_of_the_vjp():
    sine = stopped_sine()
    x = points((6,), "float64")
    assert check_function(sine, (x,)).passed
    assert check_function(scaled_sine(1.0), (x,), order=2).passed
    report = check_function(sine, (x,), order=2)
    assert report.failing_parameters == ("x (rev∘rev)",)  # the first order (rev) is right
    assert check_function(two_layer(False), (parameters("float32"), points((6, 4), "float32")), order=2).passed


def test_assert_gradients_raises_with_the_failure_table():
    x = points((4,), "float64")
    assert assert_gradients(scaled_sine(1.0), (x,)).passed
    with pytest.raises(AssertionError, match="x"):
        assert_gradients(scaled_sine(2.0), (x,))


def test_bad_calls_are_one_typed_error_before_any_probe():
    with pytest.raises(InvalidArgument):
        check_function(3, (jnp.ones(2),))
    with pytest.raises(InvalidCall, match="no floating-point input leaf"):
        check_function(lambda n: n * 2, (jnp.arange(3),))
    with pytest.raises(InvalidCall, match="needs inputs as a tuple of pytrees"):
        check_function(jnp.sin, "x")
    with pytest.raises(UnknownOption, match="check_function has no option 'argnums'"):
        check_function(jnp.sin, (jnp.ones(2),), argnums=0)
    with pytest.raises(UnsupportedJaxInput) as caught:
        check_function(jnp.sin, (jnp.ones(2, dtype=jnp.float8_e4m3fn),))
    assert str(caught.value) == (
        "input 'x' has dtype float8_e4m3fn; gradcheck probes float64, float32, float16, bfloat16, complex128 and "
        "complex64 inputs; the nearest is float16: pass .astype('float16')"
    )


def test_integer_outputs_and_inputs_are_left_out():
    def fn(x, n):
        return jnp.sin(x) * n, jnp.argmax(x)

    report = check_function(fn, (points((4,), "float64"), jnp.arange(4)))
    assert report.passed and [check.name for check in report.parameters] == ["x"]


def test_a_problem_with_jax_arrays_is_checked_as_numpy():
    w = jnp.asarray([0.5, -1.5, 2.0])
    gradient = jax.grad(lambda p: jnp.sum(p["w"] ** 3))({"w": w})
    problem = jax_problem((lambda p: float(jnp.sum(p["w"] ** 3)), {"w": w}, gradient))
    from gradcheck_cli import check_problem

    assert check_problem(problem, samples="all").passed
    wrong = jax_problem((problem.objective, {"w": w}, {"w": gradient["w"] * 3}))
    assert check_problem(wrong).failing_parameters == ("w",)


PROBLEMS = """
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

{scaled_sine}

def right():
    return scaled_sine(1.0), (np.linspace(-1.0, 1.0, 5),)  # numpy arguments are JAX code's too

def wrong():
    return jax.jit(scaled_sine(2.0)), (jnp.linspace(-1.0, 1.0, 5),)
"""


@pytest.mark.parametrize(
    "function, jobs, exit_code, failing",
    [("right", "1", 0, []), ("wrong", "1", 1, ["x"]), ("wrong", "2", 1, ["x"])],
    ids=["right", "wrong", "wrong-jobs-2"],
)
def test_gradcheck_check_takes_jax_code(tmp_path, function, jobs, exit_code, failing):
    # A jitted closure: with --jobs 2 each worker loads the problem by its reference, no pickling of fn.
    path = tmp_path / "jax_problems.py"
    path.write_text(PROBLEMS.format(scaled_sine=inspect.getsource(scaled_sine)))
    runner = CliRunner(env={"NO_COLOR": "1", "COLUMNS": None})
    arguments = ["check", f"{path}:{function}", "--json", "--jobs", jobs]
    result = runner.invoke(main, arguments, prog_name="gradcheck")
    assert result.exit_code == exit_code, result.stderr
    assert json.loads(result.stdout)["check"]["failing_parameters"] == failing


def test_the_package_imports_without_jax_and_names_the_install():
    code = textwrap.dedent("""
        import sys
        sys.modules["jax"] = None  # as if jax were not installed
        import gradcheck_cli, gradcheck_cli.check
        try:
            import gradcheck_cli.jax
        except ImportError as error:
            print(type(error).__name__, error)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("JaxUnavailable gradcheck_cli.jax needs jax, which is not installed: pip install")


def test_the_directional_taylor_test_of_the_second_order_term():
    from gradcheck_cli import check_taylor

    sine = stopped_sine()
    x = points((6,), "float64")
    # ⟨v, g(x + tΔ)⟩ − ⟨v, g(x)⟩ − t·⟨H v, Δ⟩: second order with the right H, first order without it.
    assert check_taylor(function_problem(scaled_sine(1.0), (x,), order=2)).verdict == "passed"
    result = check_taylor(function_problem(sine, (x,), order=2))
    assert result.verdict == "failed" and result.reason == "first order"


# Every order in every mode, and the checks of the derivative calls (issue 33): each right version is
# passed and each wrong one failed by jax.test_util.check_grads with the same order and modes, except
# where the bug is one check_grads cannot see (a noisy backward, a backward that breaks under vmap).
# The rules are JAX's own custom-rule tests, ported in benchmarks/_jax_scenarios.py.


def ported():
    """benchmarks/_jax_scenarios.py, imported without its turning x64 on for the rest of the session."""
    before = jax.config.jax_enable_x64
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    try:
        import _jax_scenarios
    finally:
        sys.path.pop(0)
        jax.config.update("jax_enable_x64", before)
    return _jax_scenarios


def check_grads_passes(fn, inputs, order, modes) -> bool:
    from jax.test_util import check_grads

    try:
        check_grads(fn, inputs, order=order, modes=modes)
    except AssertionError:
        return False
    return True


def test_order_3_fails_a_wrong_third_derivative_in_the_paths_that_reach_it():
    rules = ported().wrong_third_derivative  # sin, whose rule cos, whose rule −sin, whose rule is ×1.5 when wrong
    x = points((5,), "float64")
    both = ("fwd", "rev")
    assert check_grads_passes(rules(False), (x,), 3, both) and not check_grads_passes(rules(True), (x,), 3, both)
    assert check_function(rules(False), (x,), order=3, modes=both).passed
    report = check_function(rules(True), (x,), order=3, modes=both)
    assert len(report.parameters) == 14  # 2 + 4 + 8 paths, as check_grads recurses
    # The wrong rule is the third derivative's: every path of three modes, and no shorter one.
    assert report.failing_parameters == tuple(
        f"x ({label})"
        for label in ("fwd∘fwd∘fwd", "rev∘fwd∘fwd", "fwd∘rev∘fwd", "rev∘rev∘fwd")
        + ("fwd∘fwd∘rev", "rev∘fwd∘rev", "fwd∘rev∘rev", "rev∘rev∘rev")
    )
    assert check_function(rules(True), (x,), order=2, modes=both).passed


def test_forward_over_forward_checks_a_rule_with_no_reverse_mode():
    looped = ported().in_while_loop  # a rule whose own derivative is ×2 when wrong, inside lax.while_loop
    x = points((4,), "float64")
    assert check_grads_passes(looped(False), (x,), 2, ("fwd",)) and not check_grads_passes(
        looped(True), (x,), 2, ("fwd",)
    )
    assert check_function(looped(False), (x,), order=2, modes=("fwd",)).passed
    report = check_function(looped(True), (x,), order=2, modes=("fwd",))
    assert report.failing_parameters == ("x (fwd∘fwd)",)  # its first derivative is right


def test_a_nondeterministic_vjp_fails_with_the_size_of_the_difference():
    noisy = ported().noisy_vjp  # a backward ×(1 + 1e-12·U(0, 1)) when wrong, drawn anew at each call
    x = points((3, 4), "float64")
    # The noise is real (two calls of the vjp differ); check_grads, which calls it once, cannot see it.
    _, pullback = jax.vjp(noisy(True), x)
    assert not np.array_equal(pullback(jnp.ones_like(x))[0], pullback(jnp.ones_like(x))[0])
    assert check_grads_passes(noisy(True), (x,), 1, ("rev",))
    assert check_function(noisy(False), (x,)).passed
    report = check_function(noisy(True), (x,))
    assert report.verdict == "failed" and report.parameter("x").passed
    (call,) = [call for call in report.calls if not call.passed]
    assert call.kind == "determinism" and call.parameter == "x" and 0.0 < call.difference <= 1e-12
    assert call.message.startswith("nondeterministic backward: two calls of the backward with the same cotangent")
    assert check_function(noisy(True), (x,), nondet_tol=1e-11).passed
    assert check_function(jax.jit(noisy(True)), (x,)).passed  # jit draws the noise once, when it traces


def test_batched_checks_the_vjp_and_the_jvp_under_vmap_against_the_loop():
    scenarios = ported()
    x = points((4,), "float64")
    for build in (scenarios.guarded_vjp, scenarios.vmap_rule_vjp):  # a float() guard; a custom_vmap rule ×1/2
        assert check_grads_passes(build(True), (x,), 1, ("rev",))  # check_grads never batches the backward
        assert check_function(build(True), (x,)).passed
        assert check_function(build(False), (x,), batched=True).passed
    raising = check_function(scenarios.guarded_vjp(True), (x,), batched=True)
    assert [(call.kind, call.passed) for call in raising.calls] == [("determinism", True), ("batching", False)]
    assert "the vjp under jax.vmap over 3 cotangents raised" in raising.calls[1].message
    wrong = check_function(scenarios.vmap_rule_vjp(True), (x,), batched=True)
    assert wrong.failing_parameters == ("x",) and wrong.parameter("x").passed
    assert wrong.calls[1].difference > 0.1 and "and the loop of single calls differ by up to" in wrong.calls[1].message
    # The forward rule under vmap too: a custom_jvp rule whose tangent goes through the wrong batching rule.
    halving = jax.custom_batching.custom_vmap(lambda y: 2.0 * y)
    halving.def_vmap(lambda axis_size, in_batched, y: (y, in_batched[0]))
    forward = jax.custom_jvp(jnp.sin)
    forward.defjvp(lambda primals, tangents: (jnp.sin(primals[0]), halving(jnp.cos(primals[0]) * tangents[0] / 2.0)))
    assert check_function(forward, (x,), modes=("fwd",)).passed
    batched_forward = check_function(forward, (x,), modes=("fwd",), batched=True)
    assert [(call.kind, call.passed) for call in batched_forward.calls] == [("batching", False)]


# --- complex numbers and float16 (issue 33) -----------------------------------------------------
#
# JAX's convention for complex numbers is the conjugate of gradcheck's (docs/jax.md): a rule is
# written in JAX's own convention and checked as it is. Each case is verified with check_grads.


def check_grads_verdict(fn, inputs, **options) -> str:
    from jax.test_util import check_grads

    try:
        check_grads(fn, inputs, order=1, modes=["rev"], **options)
    except AssertionError:
        return "failed"
    return "passed"


def complex_points(shape, dtype="complex128"):
    count = int(np.prod(shape))
    real, imag = np.linspace(-1.3, 1.1, count), np.linspace(0.7, -0.9, count)
    return jnp.asarray((real + 1j * imag).reshape(shape), dtype=dtype)


def holomorphic_square(conjugated):
    """z ↦ z², its custom_vjp backward g·2z (JAX's: the transpose of the jvp); the bug conjugates it."""

    @jax.custom_vjp
    def square(z):
        return z * z

    square.defvjp(lambda z: (z * z, z), lambda z, g: (g * 2 * (jnp.conj(z) if conjugated else z),))
    return square


def squared_modulus(conjugated):
    """z ↦ |z|² (real), backward g·2z̄ in JAX's convention; the bug returns g·2z (torch's convention)."""

    @jax.custom_vjp
    def modulus(z):
        return jnp.real(z * jnp.conj(z))

    modulus.defvjp(lambda z: (modulus(z), z), lambda z, g: (g * 2 * (z if conjugated else jnp.conj(z)),))
    return modulus


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_a_complex_custom_vjp_in_jaxs_convention_passes_and_its_conjugate_fails(dtype):
    z = complex_points((2, 3), dtype)
    loose = {} if dtype == "complex128" else {"atol": 1e-2, "rtol": 1e-2}
    for make in (holomorphic_square, squared_modulus):
        for conjugated, expected in ((False, "passed"), (True, "failed")):
            assert check_grads_verdict(make(conjugated), (z,), **loose) == expected
            report = check_function(make(conjugated), (z,))
            assert report.verdict == expected
            assert (report.parameters[0].dtype, report.parameters[0].shape) == (dtype, (2, 3))
    # For a real output, the conjugated gradient is exactly the conjugate: named so.
    assert report.parameters[0].diagnosis.kind == "conjugate"


def test_complex_outputs_and_a_mix_with_real_outputs_are_checked_through_their_parts():
    x = points((5,), "float64")

    @jax.custom_vjp
    def polar(x):
        return jax.lax.complex(jnp.cos(x), jnp.sin(x))

    def polar_backward(x, g):  # g = conj(u) in JAX's convention: Re u = Re g, Im u = −Im g
        return (jnp.real(g) * -jnp.sin(x) - jnp.imag(g) * jnp.cos(x),)

    polar.defvjp(lambda x: (polar(x), x), polar_backward)

    @jax.custom_vjp
    def wrong_polar(x):
        return polar(x)

    wrong_polar.defvjp(lambda x: (polar(x), x), lambda x, g: (jnp.real(g) * -jnp.sin(x) + jnp.imag(g) * jnp.cos(x),))
    z = complex_points((2, 2))
    reverse, both = ("rev",), ("fwd", "rev")  # a custom_vjp has no forward mode
    for fn, inputs, modes, expected in (
        (polar, (x,), reverse, "passed"),
        (wrong_polar, (x,), reverse, "failed"),
        (lambda x: {"z": polar(x), "r": x**2}, (x,), reverse, "passed"),
        (lambda z: (z * jnp.exp(z), jnp.abs(z) ** 2), (z,), both, "passed"),
    ):
        assert check_grads_verdict(fn, inputs) == expected
        assert check_function(fn, inputs, modes=modes).verdict == expected


def test_complex_inputs_at_second_order_and_a_complex128_input_with_x64_off():
    z = complex_points(4)
    assert check_function(lambda z: jnp.real(z**3) + jnp.imag(z) ** 2, (z,), order=2).passed
    jax.config.update("jax_enable_x64", False)
    with pytest.raises(X64Disabled) as caught:
        check_function(jnp.sin, (np.ones(2, dtype=np.complex128),))
    assert caught.value.dtype == "complex128" and "pass complex64 inputs" in str(caught.value)


def test_float16_leaves_are_probed_in_float16_and_their_verdicts_are_check_grads():
    # check_grads needs float16-sized options (eps=1e-2, atol=rtol=5e-2, as torch's float16 test uses);
    # gradcheck's defaults are float16's own.
    x = jnp.asarray(np.linspace(0.5, 1.5, 6), dtype=jnp.float16)
    loose = {"eps": 1e-2, "atol": 5e-2, "rtol": 5e-2}
    for factor, expected in ((1.0, "passed"), (2.0, "failed"), (-1.0, "failed")):
        assert check_grads_verdict(scaled_sine(factor), (x,), **loose) == expected
        report = check_function(scaled_sine(factor), (x,))
        assert report.verdict == expected and report.parameters[0].dtype == "float16"


def test_a_problem_with_complex_jax_arrays_takes_jax_grads_convention():
    z = complex_points(3)

    def loss(p):
        return jnp.sum(jnp.abs(p["z"]) ** 2 + jnp.real(p["z"] ** 3))

    gradient = jax.grad(loss)({"z": z})  # JAX's convention: conj of ∂f/∂Re z + i·∂f/∂Im z
    from gradcheck_cli import check_problem

    problem = jax_problem((lambda p: float(loss(p)), {"z": z}, gradient))
    assert check_problem(problem, samples="all").passed
    wrong = jax_problem((problem.objective, {"z": z}, {"z": jnp.conj(gradient["z"])}))
    report = check_problem(wrong, samples="all")
    assert report.failing_parameters == ("z",) and report.parameters[0].diagnosis.kind == "conjugate"


def test_a_correct_float32_mlp_of_a_hundred_thousand_parameters_passes():
    # 256 → 256 → 128 → 10 with tanh under a mean cross-entropy, 99,978 float32 parameters (issue 32).
    key = jax.random.PRNGKey(0)
    widths, params = (256, 256, 128, 10), []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        key, sub = jax.random.split(key)
        kernel = jax.random.normal(sub, (fan_in, fan_out), jnp.float32) / np.sqrt(fan_in)
        params.append({"kernel": kernel, "bias": jnp.zeros(fan_out, jnp.float32)})
    key, inputs_key, labels_key = jax.random.split(key, 3)
    x = jax.random.normal(inputs_key, (32, 256), jnp.float32)
    labels = jax.random.randint(labels_key, (32,), 0, 10)

    def loss(params):
        h = x
        for index, layer in enumerate(params):
            h = h @ layer["kernel"] + layer["bias"]
            h = jnp.tanh(h) if index < len(params) - 1 else h
        return jnp.mean(jax.nn.logsumexp(h, axis=1) - h[jnp.arange(32), labels])

    assert sum(layer["kernel"].size + layer["bias"].size for layer in params) == 99_978
    report = check_function(loss, (params,))
    assert report.verdict == "passed", [(name, record.reason) for name, record in report.failures()]


def row_scaled_product(factor):
    """x Wᵀ with a custom_vjp whose weight gradient has row 3 times ``factor`` (1 is right)."""

    @jax.custom_vjp
    def product(x, w):
        return x @ w.T

    def backward(saved, g):
        x, w = saved
        return g @ w, (g.T @ x).at[3].multiply(factor)

    product.defvjp(lambda x, w: (x @ w.T, (x, w)), backward)
    return product


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_fast_check_fails_a_doubled_row_through_a_custom_vjp_and_passes_the_right_one(dtype):
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.normal(size=(8, 200)), dtype=dtype)
    w = jnp.asarray(rng.normal(size=(50, 200)) / np.sqrt(200), dtype=dtype)
    right = check_function(row_scaled_product(1.0), (x, w), fast=True)
    assert right.passed and all(parameter.selection == "fast" for parameter in right.parameters)
    # f(θ) twice, then per input multiplier 1, and 0.1, 10 and 100 only where it cannot decide
    assert right.evaluations <= 2 + (4 if dtype == "float64" else 8) * 2
    wrong = check_function(row_scaled_product(2.0), (x, w), fast=True)
    assert wrong.failing_parameters == ("w",)
    assert {check.coordinate[0] for check in wrong.parameter("w").checks.failed()} == {3}


def test_a_fast_check_of_two_inputs_calls_fn_four_times_and_its_first_value_is_confirmed():
    """jax.vjp's trace (its outputs are the first f(θ)), the joint direction's two probes and f(θ),
    which must give the vjp's outputs bit for bit: as check_grads, the vjp and three calls."""
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(3, 4)))
    w, b = jnp.asarray(rng.normal(size=(5, 4))), jnp.asarray(rng.normal(size=5))
    calls = []

    def fn(w, b):
        calls.append(None)
        return jnp.tanh(x @ w.T + b).sum()

    report = check_function(fn, (w, b), fast=True)
    assert report.passed and report.evaluations == 4 and len(calls) == 4
    assert report.parameters[0].directional.joint == ("w", "b")

    def drifting(w, b):
        calls.append(None)
        return jnp.tanh(x @ w.T + b).sum() + 1e-3 * len(calls)

    drifted = check_function(drifting, (w, b), fast=True)
    assert drifted.purity.stateful and not drifted.passed


def test_fn_is_called_with_the_host_arrays_where_they_give_its_outputs_and_with_jax_copies_elsewhere():
    from gradcheck_cli.adapters.jax.derivatives import evaluated_outputs

    x = np.linspace(-1.0, 1.0, 6)
    arrays, received = [np.array(x)], []

    def sine(x):
        received.append(x)
        return jnp.sin(x)

    plain = evaluated_outputs(sine, arrays, [x], jnp.sin(jnp.asarray(x)))
    assert np.array_equal(plain(), np.sin(x)) and len(received) == 1  # the call at θ decided, and was f there
    arrays[0][0] = 0.5
    plain()
    assert all(value is arrays[0] for value in received)  # numpy in: the same bits out, nothing copied per call

    def indexed(x):
        received.append(x)
        return x.at[0].set(2.0) * 3.0  # a JAX array's method: a numpy array has no .at

    received.clear()
    arrays[0][0] = 0.25  # not θ: a call at host copies of θ decides first
    copied = evaluated_outputs(indexed, arrays, [x], indexed(jnp.asarray(x)))
    received.clear()
    value = copied()
    assert isinstance(received[0], np.ndarray) and received[0] is not arrays[0] and np.array_equal(received[0], x)
    assert isinstance(received[-1], jax.Array) and float(value[1]) == 3.0 * float(x[1]) and float(value[0]) == 6.0
    arrays[0][0] = x[0]
    assert (
        check_function(indexed, (jnp.asarray(x),)).passed
        and check_function(indexed, (jnp.asarray(x),), fast=True).passed
    )


def test_a_fast_check_whose_vjp_forward_gives_other_bits_than_fn_is_checked_again_calling_fn_first():
    """A custom_vjp whose forward rule computes f's value another way (here one ulp off): the vjp's
    outputs are not f(θ), so the check that took them for its first f(θ) is run again, calling f at θ
    first; f is pure, and the report says so, as the default check's does."""
    calls = []

    @jax.custom_vjp
    def f(x):
        calls.append("f")
        return jnp.sum(jnp.sin(x))

    def forward(x):
        return jnp.nextafter(jnp.sum(jnp.sin(x)), jnp.inf), x

    f.defvjp(forward, lambda x, g: (g * jnp.cos(x),))
    x = jnp.linspace(-1.0, 1.0, 7)
    report = check_function(f, (x,), fast=True)
    assert report.passed and report.purity.pure and report.evaluations == 4, report.purity
    # The first check: the direction's two probes and f(θ), which differed. Again: f(θ) with the host
    # arrays, not the vjp's bits either, so JAX copies from then on: f(θ), two probes, f(θ).
    assert len(calls) == 3 + 5
    default = check_function(f, (x,)).purity
    assert (report.purity.pure, report.purity.distinct) == (default.pure, default.distinct) == (True, 1)


def test_a_fast_check_of_a_function_of_jax_arrays_only_takes_copies_once_the_host_arrays_raise():
    x = jnp.linspace(-1.0, 1.0, 6)
    received = []

    def indexed(x):
        received.append(type(x))
        return jnp.sum(x.at[0].set(2.0) ** 2)  # a numpy array has no .at

    report = check_function(indexed, (x,), fast=True)
    assert report.passed and report.purity.pure
    assert received[1] is np.ndarray and set(received[2:]) == {type(x)}  # the first probe raised, then copies


def test_a_fast_check_calls_the_vjp_once_where_it_is_xla_alone_on_the_cpu_and_twice_where_python_runs_in_it():
    """A fast check calls a vjp twice only where a second call can differ: where a custom_vjp backward (or a
    callback) runs Python at each call, or off the CPU; the default check always does."""
    from gradcheck_cli.adapters.jax.call_checks import xla_alone

    x = points((3, 4), "float64")
    plain, sine = (lambda x: jnp.sum(jnp.tanh(x) * x)), (lambda x: jnp.sum(scaled_sine(1.0)(x)))
    folded = lambda x: jax.lax.fori_loop(0, 2, lambda i, c: c * jnp.sin(c), x).sum()  # noqa: E731
    for fn, alone in ((plain, True), (jax.jit(plain), True), (folded, True), (sine, False), (jax.jit(sine), False)):
        _, pullback = jax.vjp(fn, x)
        gradients = pullback(jnp.ones(()))
        assert xla_alone(pullback, gradients) is alone
        fast, default = check_function(fn, (x,), fast=True), check_function(fn, (x,))
        assert fast.passed and default.passed
        assert [call.kind for call in fast.calls] == ([] if alone else ["determinism"])
        assert [call.kind for call in default.calls] == ["determinism"]
    _, pullback = jax.vjp(plain, x)
    assert not xla_alone(jax.tree_util.Partial(lambda u: pullback(u)), pullback(jnp.ones(())))  # no jaxpr to read
    assert not xla_alone(pullback, (np.ones((3, 4)),))  # not a JAX array: where it is, unknown
    noisy = ported().noisy_vjp  # Python at each call of its backward: the fast check finds the noise too
    failed = check_function(noisy(True), (x,), fast=True)
    assert [(call.kind, call.passed) for call in failed.calls] == [("determinism", False)]


@pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")  # JAX's, on the host arrays
def test_a_function_that_donates_its_inputs_leaves_the_callers_arrays_alive():
    """jax.jit(..., donate_argnums) deletes the arrays it is called with, under jax.vjp too: the vjp is
    traced at host arrays of θ, which JAX takes as inputs of its own (a JAX array given to the vjp would
    be deleted, and with it the residual the backward needs: jax.vjp itself raises then)."""
    donating = jax.jit(lambda x: jnp.sin(x) * 2.0, donate_argnums=0)
    reduced = jax.jit(lambda x, y: jnp.sum(jnp.sin(x) * 2.0 * y), donate_argnums=(0, 1))
    x, y = points((3, 4), "float64"), np.linspace(0.5, 1.5, 12).reshape(3, 4)
    kept, kept_y = np.array(x), y.copy()
    for fast in (False, True):
        assert check_function(donating, (x,), fast=fast).passed and not x.is_deleted()
        assert check_function(reduced, (x, y), fast=fast).passed and not x.is_deleted()
        assert np.array_equal(np.asarray(x), kept) and np.array_equal(y, kept_y)
