"""Objectives that compute in lower precision than their parameters (docs/method.md, "Verdicts").

A float64 parameter handed to an objective that computes in float32 inside: its values carry
float32's rounding (about 6e-8·|f|), 10⁸ times float64's, and a float32 part's staircase moves an
estimate by up to ulp/h. Such a correct gradient is never `failed` (issue 19): the noise the
estimates show enters every bar, and the reason names the precision. A ×2, sign-flipped or 1e-2
shifted gradient of the same objective still never passes.
"""

import numpy as np
import pytest

from gradcheck_cli import check_gradients

FORMS = {  # float32 inside: (f32 part of t, its float64 gradient)
    "tanh": (lambda t: np.sum(np.tanh(t), dtype=np.float32), lambda t: 1.0 - np.tanh(t) ** 2),
    "squares": (lambda t: np.sum(t * t, dtype=np.float32), lambda t: 2.0 * t),
    "exp": (lambda t: np.mean(np.exp(0.5 * t), dtype=np.float32), lambda t: 0.5 * np.exp(0.5 * t) / t.size),
    "sincos": (
        lambda t: np.sum(np.sin(t) * np.cos(2 * t), dtype=np.float32),
        lambda t: np.cos(t) * np.cos(2 * t) - 2 * np.sin(t) * np.sin(2 * t),
    ),
    "logsumexp": (lambda t: np.log(np.sum(np.exp(t))), lambda t: np.exp(t) / np.sum(np.exp(t))),
    "rounded input": (lambda t: np.sum(t.astype(np.float64) ** 2), lambda t: 2.0 * t),  # float64 of float32(θ)
}
SHAPES = [(3,), (4, 5), (2, 3, 4)]


def _problem(form: str, weight: float, shape: tuple, seed: int):
    """f(t) = float32 part(float32(t)) + weight·Σt² (float64), its exact gradient, and θ."""
    part, derivative = FORMS[form]
    theta = np.random.default_rng(seed).normal(size=shape)

    def objective(parameters):
        t = parameters["w"]
        return float(part(t.astype(np.float32))) + weight * float(np.sum(t * t))

    return objective, theta, derivative(theta) + 2.0 * weight * theta


CASES = [
    (form, weight, shape, step)
    for form in FORMS
    for weight in (0.0, 1e-6, 1e-3, 1.0, 1e3)
    for shape in SHAPES
    for step in (None, "auto")
]


@pytest.mark.parametrize(("form", "weight", "shape", "step"), CASES)
def test_correct_gradient_of_float32_inside_is_never_failed(form, weight, shape, step):
    for seed in range(3):
        objective, theta, gradient = _problem(form, weight, shape, seed)
        report = check_gradients(objective, {"w": theta}, {"w": gradient}, step=step)
        assert report.verdict != "failed", (seed, [c.reason for c in report.parameters[0].checks if not c.passed])
        for record in [*report.parameters[0].checks, report.parameters[0].directional]:
            if record.verdict == "inconclusive" and "did not change" not in record.reason:
                assert "precision" in record.reason, record.reason


@pytest.mark.parametrize("bug", ["doubled", "sign", "shifted"])
@pytest.mark.parametrize(("form", "weight"), [(f, w) for f in FORMS for w in (0.0, 1e-3, 1.0)])
def test_wrong_gradient_of_float32_inside_never_passes(form, weight, bug):
    for seed, step in [(0, None), (1, "auto"), (2, None)]:
        objective, theta, gradient = _problem(form, weight, (4, 5), seed)
        wrong = {"doubled": 2.0 * gradient, "sign": -gradient, "shifted": gradient + 1e-2 * np.abs(gradient).max()}
        report = check_gradients(objective, {"w": theta}, {"w": wrong[bug]}, step=step)
        assert report.verdict != "passed", (seed, step)


def test_the_issue_objective_is_never_failed_in_forty_seeds():
    """The issue's reproducer: failed in 35 of 40 seeds at the default step before."""
    for step in (None, "auto"):
        verdicts = set()
        for seed in range(40):
            theta = np.random.default_rng(seed).normal(size=(4, 5))

            def objective(parameters):
                t = parameters["w"]
                return float(np.sum(np.tanh(t.astype(np.float32)), dtype=np.float32)) + 1e-3 * float(np.sum(t * t))

            gradient = 1 - np.tanh(theta) ** 2 + 2e-3 * theta
            verdicts.add(check_gradients(objective, {"w": theta}, {"w": gradient}, step=step).verdict)
        assert "failed" not in verdicts


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("stale_scale", "other_scale"), [(1, 1), (1, 100), (10, 1), (10, 100), (100, 100)])
def test_a_stale_copy_with_a_nonzero_analytic_gradient_never_passes(dtype, stale_scale, other_scale):
    """f reads a copy of x made before the check: every probe of x leaves f bit-identical, no
    evidence for the analytic 1e-3 (it passed in float32 before, as within the collapsed bar); where
    the bar resolves 1e-3 it fails, saying that f does not change along x."""
    rng = np.random.default_rng(stale_scale * other_scale)
    x, w = rng.normal(size=8).astype(dtype), rng.normal(size=8).astype(dtype)
    stale = (stale_scale * x).astype(dtype)

    def objective(parameters):
        return float(np.sum(stale**2) + other_scale * np.sum(parameters["w"] ** 2))

    gradients = {"x": np.full(8, 1e-3, dtype), "w": 2 * other_scale * w}
    report = check_gradients(objective, {"x": x, "w": w}, gradients)
    checked = report.parameter("x")
    assert checked.verdict in ("inconclusive", "failed")
    if checked.verdict == "failed":
        assert checked.diagnosis.message.startswith("f does not change along x")  # its coordinates or its direction
    assert report.parameter("w").verdict != "failed"


def test_a_gradient_that_is_zero_up_to_rounding_still_passes_where_f_does_not_move():
    """A bias before a normalisation: f does not depend on it, its analytic gradient is a rounding
    residue (1e-17 beside gradients of order 1), and it passes as zero."""
    rng = np.random.default_rng(5)
    x, b, w = rng.normal(size=(6, 3)), rng.normal(size=3), rng.normal(size=4)

    def objective(parameters):
        y = x + parameters["b"]
        return float(np.sum(np.tanh(y - y.mean(axis=0))) + np.sum(parameters["w"] ** 2))

    y = x + b
    dy = 1 - np.tanh(y - y.mean(axis=0)) ** 2
    residue = np.sum(dy - dy.mean(axis=0), axis=0)  # exactly zero in exact arithmetic
    report = check_gradients(objective, {"b": b, "w": w}, {"b": residue, "w": 2 * w})
    assert np.all(np.abs(residue) < 1e-14)
    assert report.verdict == "passed"


@pytest.mark.parametrize("step", [None, 0.5, 2.0**-10])
@pytest.mark.parametrize("constant", [0.0, 1.0])
def test_integer_valued_float64_data_is_no_evidence_of_a_lower_precision(step, constant):
    """θ = −4 … 4 (float64) and f = Σθ² + c: at a dyadic step every f(θ ± h) is a bfloat16 number,
    exactly as float64 computes it, and the values were taken for a bfloat16 objective's (bars of
    2⁻⁷·|f|). The probes are such numbers themselves: no evidence. A relative 1e-3 error fails
    at every nonzero coordinate (4 of 9 were inconclusive at step 0.5)."""
    theta = np.arange(-4.0, 5.0)

    def objective(parameters):
        return float(np.sum(parameters["x"] ** 2) + constant)

    report = check_gradients(objective, {"x": theta}, {"x": 2 * theta * (1 + 1e-3)}, step=step)
    verdicts = [record.verdict for record in report.parameters[0].checks]
    assert verdicts == ["failed"] * 4 + ["passed"] + ["failed"] * 4
    assert check_gradients(objective, {"x": theta}, {"x": 2 * theta}, step=step).verdict == "passed"


def test_one_shared_center_is_read_as_the_column_of_its_value_would_be():
    from gradcheck_cli.verdict.estimates import value_epsilons

    rng = np.random.default_rng(5)
    specials = [np.nan, np.inf, 1e300, 3.5e38, 0.0, 1e-46, 0.5, float(np.float32(0.1)), 0.1]
    for _ in range(3000):
        n = int(rng.integers(1, 6))
        columns = []
        for _ in range(2):
            column = rng.standard_normal(n)
            kind = rng.integers(0, 3)
            if kind:  # float32 numbers, and bfloat16 ones
                single = column.astype(np.float32)
                column = (single.view(np.uint32) & (0xFFFF0000 if kind == 2 else 0xFFFFFFFF)).view(np.float32)
            columns.append(column.astype(np.float64))
        center = specials[rng.integers(0, len(specials))] if rng.integers(0, 2) else columns[0][0]
        epsilon = [2.0**-52, 2.0**-23, 2.0**-10][rng.integers(0, 3)]
        with np.errstate(all="ignore"):
            shared = value_epsilons(columns[0], center, columns[1], epsilon)
            column = value_epsilons(columns[0], np.full(n, center), columns[1], epsilon)
        assert np.array_equal(shared, column), (columns, center, epsilon)


def _precision_epsilon(values: list, points: list | None, epsilon: float) -> float:
    """value_epsilons' definition for one coordinate, value by value: float32's ε (bfloat16's) where
    its three values are float32 (bfloat16) numbers and, given its points, some point is not."""

    def numbers(of: list) -> tuple:
        with np.errstate(all="ignore"):
            single = [np.float32(value) for value in of]
        float32 = all(float(rounded) == value for rounded, value in zip(single, of))
        return float32, float32 and all(int(rounded.view(np.uint32)) & 0xFFFF == 0 for rounded in single)

    if epsilon >= 2.0**-7:
        return epsilon
    single, half = numbers(values)
    if points is not None:
        single_points, half_points = numbers(points)
        single, half = single and not single_points, half and not half_points
    if not single:
        return epsilon
    return 2.0**-7 if half else max(epsilon, 2.0**-23)


def test_value_epsilons_are_each_coordinates_own_by_definition():
    from gradcheck_cli.verdict.estimates import value_epsilons

    rng = np.random.default_rng(11)
    specials = [np.nan, np.inf, -np.inf, 1e300, 3.5e38, 0.0, -0.0, 2.0**-140, 3 * 2.0**-133, 0.5, 0.1]

    def column(n: int) -> np.ndarray:
        kind = rng.integers(0, 4)
        if kind == 3:
            return np.array([specials[k] for k in rng.integers(0, len(specials), n)])
        single = rng.standard_normal(n).astype(np.float32)  # float64, float32 and bfloat16 numbers
        bits = {0: None, 1: 0xFFFFFFFF, 2: 0xFFFF0000}[kind]
        if bits is None:
            return rng.standard_normal(n)
        return (single.view(np.uint32) & np.uint32(bits)).view(np.float32).astype(np.float64)

    for _ in range(3000):
        n = int(rng.integers(1, 5))
        minus, plus, center = column(n), column(n), column(n)
        shared = bool(rng.integers(0, 2))
        center = float(center[0]) if shared else center
        points = (column(n), column(n), column(n)) if rng.integers(0, 2) else None
        epsilon = [2.0**-52, 2.0**-23, 2.0**-10, 2.0**-7, 1e-9][rng.integers(0, 5)]
        expected = [
            _precision_epsilon(
                [minus[k], center if shared else center[k], plus[k]],
                None if points is None else [point[k] for point in points],
                epsilon,
            )
            for k in range(n)
        ]
        with np.errstate(all="ignore"):
            found = value_epsilons(minus, center, plus, epsilon, points)
        assert found.tolist() == expected, (minus, center, plus, points, epsilon)
