"""sweep.py: the column-wise coordinate sweep is the scalar code, bit for bit, and a check keeps
its coordinates as columns."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extras import require
from gradcheck_cli.chapter.sampled import sampled_tensor_gradient_check
from gradcheck_cli.check import CoordinateChecks, check_gradients
from gradcheck_cli.core.record import float_bits, same_bits
from gradcheck_cli.engine.dtypes import dtype_perturbations, probe_dtype
from gradcheck_cli.engine.sweep import plan_columns, with_probes
from gradcheck_cli.errors import GradCheckError
from gradcheck_cli.verdict.estimates import EstimateColumns
from gradcheck_cli.verdict.rules import verdict_passes
from gradcheck_cli.verdict.terms import PASSED, Resolution, Standard


def _bits(values) -> list:
    return [np.float64(value).view(np.uint64).item() for value in values]


@st.composite
def points_and_steps(draw, dtype_name):
    if dtype_name == "bfloat16":
        ml_dtypes = require("ml_dtypes")
        dtype, info = np.dtype(ml_dtypes.bfloat16), ml_dtypes.finfo(ml_dtypes.bfloat16)
    else:
        dtype, info = np.dtype(dtype_name), np.finfo(dtype_name)
    magnitude = st.floats(min_value=float(info.smallest_subnormal), max_value=float(info.max))
    points = draw(st.lists(st.one_of(magnitude, magnitude.map(lambda x: -x), st.just(0.0)), min_size=1, max_size=8))
    points = np.array(points, dtype=np.float64).astype(dtype)
    step = draw(
        st.one_of(
            st.floats(min_value=1e-45, max_value=1e39),
            st.sampled_from([2.0**-24, 2.0**-25, 3 * 2.0**-26, 1e-7, 2.0**-8, 2.0**-9]),
        )
    )
    return points, step


@pytest.mark.parametrize("dtype_name", ["float64", "float32", "bfloat16"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_probe_columns_are_dtype_perturbations_bit_for_bit(dtype_name, data):
    points, step = data.draw(points_and_steps(dtype_name))
    dtype = probe_dtype(dtype_name)
    for requested in (step, None):
        scalar, first_error = [], None
        for point in points.astype(np.float64).tolist():
            try:
                h = dtype.default_step(point) if requested is None else requested
                scalar.append(dtype_perturbations(point, h, dtype))
            except GradCheckError as error:
                first_error = error
                break
        columns = plan_columns(points, np.zeros(points.shape), range(points.size), dtype, None, probes=False)
        if first_error is not None:
            with pytest.raises(GradCheckError) as raised:
                with_probes(columns, dtype, requested)
            assert raised.value.source.to_dict() == first_error.to_dict()  # AtCoordinate of the same error
            continue
        planned = with_probes(columns, dtype, requested)
        for name in ("minus_point", "plus_point", "minus_spacing", "plus_spacing", "left_weight", "right_weight"):
            assert _bits(getattr(planned, name)) == _bits([getattr(geometry, name) for geometry in scalar]), name


def _problem(seed: int, shape: tuple, dtype, wrong: str):
    """sum(c·sin(θ)) + ½‖θ‖² in ``dtype``, its gradient with a bug of kind ``wrong``."""
    random = np.random.default_rng(seed)
    theta = random.standard_normal(shape).astype(dtype)
    weights = random.standard_normal(shape) * 10.0 ** random.integers(-6, 4)

    def objective(parameters):
        x = np.asarray(parameters["x"], dtype=np.float64)
        return float(np.sum(weights * np.sin(x)) + 0.5 * np.sum(x * x))

    gradient = weights * np.cos(theta.astype(np.float64)) + theta.astype(np.float64)
    if wrong == "scale":
        gradient = 2.0 * gradient
    elif wrong == "one":
        gradient.reshape(-1)[random.integers(gradient.size)] += 1.0
    elif wrong == "tiny":
        gradient = gradient * (1 + 1e-9)
    return objective, theta, gradient


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from([(1,), (7,), (3, 4), (5, 5), (2, 3, 4)]),
    dtype=st.sampled_from([np.float64, np.float32]),
    wrong=st.sampled_from(["none", "scale", "one", "tiny"]),
    samples=st.sampled_from([1, 4, 16, "all"]),
)
def test_records_built_from_columns_agree_with_the_columns(seed, shape, dtype, wrong, samples):
    objective, theta, gradient = _problem(seed, shape, dtype, wrong)
    report = check_gradients(objective, {"x": theta}, {"x": gradient}, samples=samples)
    checks = report.parameters[0].checks
    assert isinstance(checks, CoordinateChecks)
    records = list(checks)  # each record read from the columns, one at a time
    assert len(records) == len(checks) == report.checked
    assert checks.verdict_count(PASSED) == sum(record.passed for record in records)
    assert checks == tuple(records) and hash(checks) == hash(tuple(records))
    assert checks.unpassed() == [record for record in records if not record.passed]
    worst = max(records, key=lambda record: record.estimates[record.decided_at].relative_error)
    assert checks.worst() == worst
    for record in records:
        if record.passed and len(record.estimates) == 1:
            difference = record.difference
            assert same_bits(record.estimates[0].numerical, difference.derivative)
            assert math.isfinite(record.estimates[0].error_bar.total)


def test_a_check_keeps_its_coordinates_as_columns_and_reads_like_a_sequence():
    objective, theta, gradient = _problem(3, (6, 6), np.float64, "one")
    report = check_gradients(objective, {"x": theta}, {"x": gradient}, samples="all")
    checks = report.parameters[0].checks
    assert len(checks) == 36
    assert checks[-1] == checks[35] and checks[0] == checks[-36]
    assert checks[2:5] == tuple(checks[k] for k in (2, 3, 4))
    with pytest.raises(IndexError):
        checks[36]
    assert [record.coordinate for record in checks] == [(i, j) for i in range(6) for j in range(6)]
    assert "1 confirmed at other steps" in repr(checks) or "confirmed at other steps" in repr(checks)
    # to_dict() is plain lists, as json.dumps's C encoder needs; the same as the records' own
    document = report.to_dict()
    coordinates = document["parameters"][0]["checks"]
    assert type(coordinates) is list and coordinates == [record.to_dict() for record in checks]
    assert json.loads(json.dumps(document)) == json.loads(json.dumps(document, indent=2))
    again = check_gradients(objective, {"x": theta}, {"x": gradient}, samples="all")
    assert again == report


def test_a_float32_probe_whose_f64_difference_lands_on_a_midpoint_is_rounded_once():
    # 1 − (5·2⁻²⁵ + 2⁻⁷⁵) rounds in f64 to 1 − 2.5·2⁻²⁴, the float32 midpoint between 1 − 3·2⁻²⁴ and
    # 1 − 2·2⁻²⁴, which a cast rounds to even (1 − 2⁻²³); the exact value is below it: 1 − 3·2⁻²⁴.
    step = 5 * 2.0**-25 + 2.0**-75
    points = np.array([1.0, -1.0], dtype=np.float32)
    dtype = probe_dtype("float32")
    columns = with_probes(plan_columns(points, np.zeros(2), range(2), dtype, None, probes=False), dtype, step)
    assert columns.minus_point.tolist() == [1.0 - 3 * 2.0**-24, -1.0 - 2.0**-23]
    assert columns.plus_point.tolist() == [1.0 + 2.0**-23, -1.0 + 3 * 2.0**-24]
    assert columns.minus_point[0] == dtype_perturbations(1.0, step, dtype).minus_point
    assert float(np.float32(1.0 - step)) == 1.0 - 2.0**-23  # one f64 subtraction and a cast: rounded twice


def _counted(objective):
    calls = [0]

    def counted(parameters):
        calls[0] += 1
        return objective(parameters)

    return counted, calls


def test_a_non_finite_slope_is_raised_right_after_its_coordinates_probes():
    def objective(parameters):
        x = parameters["x"]
        if x[1] != 0:
            raise RuntimeError("the objective fails at coordinate 1")
        return -1.7e308 if x[0] < 0 else 1.7e308

    counted, calls = _counted(objective)
    x = np.zeros(2)
    with pytest.raises(GradCheckError) as raised:
        check_gradients(counted, {"x": x}, {"x": np.zeros(2)}, samples="all")
    assert "coordinate [0]" in str(raised.value) and "slope" in str(raised.value)
    assert calls[0] == 3 and x.tolist() == [0.0, 0.0]  # f(θ), then coordinate 0's two probes


@pytest.mark.parametrize("scalar", [np.float32, np.float64])
def test_numpy_float_values_are_read_as_the_python_floats_they_equal_and_a_nan_among_them_is_an_error(scalar):
    x = np.linspace(-1.0, 1.0, 6).astype(np.float32)

    def objective(parameters, convert=scalar):
        return convert(np.sum(parameters["x"] ** 3, dtype=np.float32))

    gradient = {"x": 3 * x.astype(np.float64) ** 2}
    as_numpy = check_gradients(objective, {"x": x}, gradient, samples="all").to_dict()
    as_python = check_gradients(lambda p: float(objective(p)), {"x": x}, gradient, samples="all").to_dict()
    assert as_numpy == as_python and as_numpy["verdict"] == "passed"

    def nan_at_coordinate_2(parameters, theta=float(x[2])):
        return scalar("nan") if parameters["x"][2] != theta else objective(parameters)

    with pytest.raises(
        GradCheckError, match=r"coordinate \[2\] failed: minus function evaluation returned NaN"
    ) as raised:
        check_gradients(nan_at_coordinate_2, {"x": x}, gradient, samples="all")
    assert type(raised.value.source.source).__name__ == "NonFiniteEvaluation"  # in AtParameter(AtCoordinate(·))
    assert x.tobytes() == np.linspace(-1.0, 1.0, 6).astype(np.float32).tobytes()


def test_an_array_made_read_only_is_an_error_right_after_that_call():
    x = np.arange(4.0)

    def objective(parameters):
        array = parameters["x"]
        if array[2] != 2.0:
            array.flags.writeable = False
        return float(np.sum(array**2))

    counted, calls = _counted(objective)
    with pytest.raises(GradCheckError) as raised:
        check_gradients(counted, {"x": x}, {"x": 2 * x}, samples="all")
    assert "coordinate [2]" in str(raised.value) and "read-only" in str(raised.value)
    # f(θ), coordinates 0 and 1, f(θ) at the first checkpoint, and coordinate 2's first probe
    assert calls[0] == 7 and x.tolist() == [0.0, 1.0, 2.0, 3.0] and not x.flags.writeable


def test_a_view_made_read_only_is_restored_and_an_error_at_that_coordinate_in_both_checks():
    # A transposed (non-contiguous) view: the loop writes through ndarray's flat iterator of the view,
    # which refuses the write of θ back once the objective made the view read-only; θ is written
    # back all the same, and the error names the coordinate, right after that call.
    for chapter in (False, True):
        base = np.arange(6.0).reshape(2, 3)
        view = base.T
        calls = [0]

        def objective(parameters, view=view):
            calls[0] += 1
            if view[2, 1] != 5.0:  # coordinate [2, 1] is probed
                view.flags.writeable = False
            return float(np.sum(view**2))

        with pytest.raises(GradCheckError) as raised:
            if chapter:
                sampled_tensor_gradient_check(view, 2 * view, 1e-5, 1e-6, 6, objective)
            else:
                check_gradients(objective, {"x": view}, {"x": 2 * view}, samples="all")
        assert "coordinate [2, 1]" in str(raised.value) and "read-only" in str(raised.value)
        assert calls[0] == (16 if chapter else 14)  # 5 coordinates × 3 calls, or f(θ) thrice and 5 × 2; then one
        assert base.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and not view.flags.writeable


def test_the_columns_never_warn_or_raise_where_python_floats_would_not():
    x = np.array([1.0, 2.0])
    with np.errstate(all="raise"):
        tiny = check_gradients(
            lambda p: 1e-200 * float(np.sum(p["x"] ** 2)), {"x": x}, {"x": 2e-200 * x}, samples="all"
        )
        huge = check_gradients(lambda p: -1e308 * float(p["x"][0]), {"x": np.zeros(1)}, {"x": np.array([1e308])})
    assert tiny.verdict in ("passed", "inconclusive") and huge.verdict == "failed"


def test_a_selection_a_check_cannot_hold_is_refused_for_every_sampler(monkeypatch):
    from gradcheck_cli.engine import sampling

    monkeypatch.setattr(sampling, "available_memory", lambda: 5000 * sampling.CHECKED_COORDINATE_BYTES)
    w = np.zeros(6000)
    for options in ({"samples": "all"}, {"samples": 5001}, {"samples": 5001, "sampler": "chapter"}):
        with pytest.raises(GradCheckError, match="selects (6000|5001) coordinates, more than the 5000"):
            check_gradients(lambda parameters: 0.0, {"w": w}, {"w": w}, **options)
    assert check_gradients(lambda parameters: 0.0, {"w": w}, {"w": w}, samples=5000).checked == 5000


_FINITE = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(
    analytic=_FINITE,
    numerical=_FINITE,
    bar=st.floats(min_value=0.0, max_value=1e3),
    consistent=st.booleans(),
    tolerance=st.sampled_from([1e-6, 4.9e-3, 0.1]),
    gradient=st.floats(min_value=0.0, max_value=1e6),
)
def test_the_pass_rule_is_one_function_on_floats_and_on_columns(
    analytic, numerical, bar, consistent, tolerance, gradient
):
    # The judge applies verdict_passes to one estimate, the sweep to columns: the same verdict either way.
    scale = max(abs(analytic), abs(numerical))
    relative = 0.0 if scale == 0.0 else abs(analytic - numerical) / scale
    standard = Standard(tolerance, Resolution(gradient=gradient, check=0.0))
    column = np.array
    columns = EstimateColumns(
        *(column([value]) for value in (1e-5, analytic, numerical, scale, relative, bar, 0.0, bar)),
        column([consistent]),
    )
    on_floats = verdict_passes(columns.estimate(0), tolerance, standard)
    on_columns = verdict_passes(columns, tolerance, standard)
    assert type(on_floats) is bool and on_columns.tolist() == [on_floats]


@settings(max_examples=200, deadline=None)
@given(theta=st.lists(st.floats(min_value=-1e300, max_value=1e300), min_size=1, max_size=8))
def test_the_default_step_is_one_rule_on_arrays_and_on_floats(theta):
    for name in ("float64", "float32"):
        dtype = probe_dtype(name)
        steps = dtype.default_step(np.array(theta))
        assert [float_bits(step) for step in steps.tolist()] == [float_bits(dtype.default_step(t)) for t in theta]


def test_a_confirmation_steps_bar_is_the_rounding_of_f_over_its_stencil():
    # f = x² at x = 3 with a wrong gradient 7 (the truth is 6): confirmed at h/10 and 10h, each of
    # whose bars is ROUNDING_FACTOR·ε·max|f|·(w₋/h₋ + w₊/h₊ + |w₋/h₋ − w₊/h₊|) by hand.
    x = np.array([3.0])
    report = check_gradients(lambda p: float(p["x"][0] ** 2), {"x": x}, {"x": np.array([7.0])})
    record = report.parameters[0].checks[0]
    assert record.verdict == "failed" and len(record.estimates) == 3
    h = probe_dtype("float64").default_step(3.0)
    for estimate, step in zip(record.estimates[1:], (h * 0.1, h * 10.0)):
        geometry = dtype_perturbations(3.0, step, probe_dtype("float64"))
        values = [geometry.minus_point**2, 9.0, geometry.plus_point**2]
        left = geometry.left_weight / geometry.minus_spacing
        right = geometry.right_weight / geometry.plus_spacing
        rounding = 4.0 * 2.0**-52 * max(values) * (left + right + abs(left - right))
        assert estimate.step == step and same_bits(estimate.error_bar.rounding, rounding)
        assert estimate.error_bar.jitter == 0.0 and estimate.analytic == 7.0
