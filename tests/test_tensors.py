"""The deterministic sampler and the sampled tensor check, with exact restoration."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from extras import bfloat16
from gradcheck_cli import (
    AtCoordinate,
    EmptyTensor,
    GradientShapeMismatch,
    InvalidArgument,
    InvalidStep,
    InvalidTolerance,
    NonFiniteAnalyticGradient,
    NonFiniteEvaluation,
    PerturbationUnchanged,
    ReadOnlyArray,
    ShapeOverflow,
    UnsupportedDtype,
    ZeroSamples,
    sample_tensor_coordinates,
    sampled_tensor_gradient_check,
)
from gradcheck_cli.errors import InvalidShape


def offsets(shape, samples):
    return [sample.flat_index for sample in sample_tensor_coordinates(shape, samples)]


def test_chapter_sampler_offsets_and_coordinates():
    # Chapter: S = min(4, 6) = 4, floor(5k/3) for k = 0..3 gives [0, 1, 3, 5],
    # coordinates [[0, 0], [0, 1], [1, 0], [1, 2]].
    samples = sample_tensor_coordinates([2, 3], 4)
    assert [sample.flat_index for sample in samples] == [0, 1, 3, 5]
    assert [list(sample.coordinate) for sample in samples] == [[0, 0], [0, 1], [1, 0], [1, 2]]


def test_one_sample_takes_the_upper_middle():
    # S = 1: floor(N/2); for even N the larger of the two central offsets.
    assert offsets([6], 1) == [3]
    assert offsets([7], 1) == [3]
    assert offsets([2, 3], 1) == [3]


def test_more_samples_than_elements_takes_every_element():
    assert offsets([2, 3], 100) == [0, 1, 2, 3, 4, 5]


def test_rank_zero_has_one_coordinate():
    samples = sample_tensor_coordinates([], 4)
    assert [(s.flat_index, s.coordinate) for s in samples] == [(0, ())]


def test_huge_shapes_are_sampled_without_allocating_them():
    # 10^18 elements: each offset is floor(k (N-1) / (S-1)) in exact integer arithmetic.
    samples = sample_tensor_coordinates([10**12, 10**6], 3)
    n = 10**18
    assert [s.flat_index for s in samples] == [0, (n - 1) // 2, n - 1]
    assert samples[-1].coordinate == (10**12 - 1, 10**6 - 1)
    assert samples[1].coordinate == divmod((n - 1) // 2, 10**6)


def test_shape_errors():
    with pytest.raises(ZeroSamples) as caught:
        sample_tensor_coordinates([2, 3], 0)
    assert str(caught.value) == "sampled tensor gradient check needs at least one sample"
    with pytest.raises(EmptyTensor) as caught:
        sample_tensor_coordinates([2, 0, 3], 4)
    assert str(caught.value) == "sampled tensor gradient check needs at least one value"
    with pytest.raises(ShapeOverflow) as caught:
        sample_tensor_coordinates([2**32, 2**31], 4)
    assert str(caught.value) == "sampled tensor shape overflows a signed 64-bit element count"
    # The largest count that fits is fine.
    assert offsets([2**63 - 1], 2) == [0, 2**63 - 2]
    with pytest.raises(InvalidShape) as caught:
        sample_tensor_coordinates([2, -3], 4)
    assert str(caught.value) == "tensor shape [2, -3] must contain only nonnegative whole numbers"


@given(st.lists(st.integers(min_value=1, max_value=50), max_size=4), st.integers(min_value=1, max_value=400))
def test_sampler_offsets_are_unique_ascending_in_range(shape, requested):
    n = math.prod(shape)
    samples = sample_tensor_coordinates(shape, requested)
    flat = [s.flat_index for s in samples]
    assert len(flat) == min(requested, n)
    assert flat == sorted(set(flat))
    assert all(0 <= offset < n for offset in flat)
    if len(flat) > 1:
        assert flat[0] == 0 and flat[-1] == n - 1
    for sample in samples:
        assert np.ravel_multi_index(sample.coordinate, shape) == sample.flat_index if shape else True


def sum_of_squares(array):
    return float(np.sum(array * array))


def test_chapter_shaped_check_passes_and_restores():
    parameters = np.array([[0.0, 1.0, -1.0], [2.0, 0.0, -2.0]])
    before = parameters.tobytes()
    check = sampled_tensor_gradient_check(parameters, 2 * parameters, 1e-5, 1e-6, 4, sum_of_squares)
    assert check.passed and check.shape == (2, 3) and check.requested_samples == 4
    assert [list(c.coordinate) for c in check.checks] == [[0, 0], [0, 1], [1, 0], [1, 2]]
    assert parameters.tobytes() == before


def test_a_wrong_coordinate_fails_its_comparison_only():
    parameters = np.arange(6.0).reshape(2, 3)
    analytic = 2 * parameters
    analytic[1, 0] += 0.5
    check = sampled_tensor_gradient_check(parameters, analytic, 1e-5, 1e-6, 4, sum_of_squares)
    assert not check.passed
    assert [c.comparison.passed for c in check.checks] == [True, True, False, True]


def test_objective_is_called_three_times_per_coordinate_in_order():
    parameters = np.arange(6.0).reshape(2, 3)
    seen = []

    def objective(array):
        seen.append(array.copy())
        return sum_of_squares(array)

    sampled_tensor_gradient_check(parameters, 2 * parameters, 0.5, 1e-6, 4, objective)
    assert len(seen) == 12
    for k, flat in enumerate([0, 1, 3, 5]):
        minus, center, plus = (snapshot.ravel() for snapshot in seen[3 * k : 3 * k + 3])
        assert minus[flat] == flat - 0.5 and center[flat] == flat and plus[flat] == flat + 0.5
        # Only the selected coordinate moves.
        assert np.array_equal(np.delete(minus, flat), np.delete(np.arange(6.0), flat))


def test_the_objective_sees_the_callers_array_itself():
    parameters = np.zeros(3)
    seen = set()
    sampled_tensor_gradient_check(parameters, np.zeros(3), 0.1, 1e-6, 1, lambda a: seen.add(id(a)) or 0.0)
    assert seen == {id(parameters)}


@pytest.mark.parametrize(
    "make_view",
    [
        lambda base: base.T,
        lambda base: base[:, 1],
        lambda base: base[::2, ::-1],
    ],
    ids=["transposed", "column", "strided-reversed"],
)
def test_non_contiguous_views_are_perturbed_through_the_view(make_view):
    base = np.arange(24.0).reshape(4, 6)
    view = make_view(base)
    before = base.tobytes()
    touched = []

    def objective(array):
        touched.append(base.copy())
        return sum_of_squares(view)

    check = sampled_tensor_gradient_check(view, 2 * view, 1e-5, 1e-6, 3, objective)
    assert check.passed
    assert base.tobytes() == before
    # The minus probe of the first coordinate moved exactly one element of the base array.
    assert np.count_nonzero(touched[0] != base) == 1


def test_validation_happens_before_the_first_call():
    parameters = np.array([1.0, 2.0, 1e300, 4.0])
    analytic = np.array([1.0, 1.0, 1.0, math.nan])
    calls = []
    with pytest.raises(AtCoordinate) as caught:
        sampled_tensor_gradient_check(parameters, analytic, 1e-5, 1e-6, 4, lambda a: calls.append(1) or 0.0)
    # 1e300 - 1e-5 rounds back to 1e300: the third coordinate is rejected, before any call.
    assert isinstance(caught.value.source, PerturbationUnchanged)
    assert caught.value.__cause__ is caught.value.source
    assert caught.value.coordinate == [2]
    assert str(caught.value) == (
        "gradient check at coordinate [2] failed: "
        "minus perturbation from point 1e300 by step 1e-5 rounds back to the point"
    )
    assert calls == []
    parameters[2] = 3.0
    with pytest.raises(AtCoordinate) as caught:
        sampled_tensor_gradient_check(parameters, analytic, 1e-5, 1e-6, 4, lambda a: calls.append(1) or 0.0)
    assert isinstance(caught.value.source, NonFiniteAnalyticGradient)
    assert str(caught.value) == "gradient check at coordinate [3] failed: analytic gradient NaN must be finite"
    assert calls == []


def test_request_errors_in_the_chapters_order():
    parameters, analytic = np.zeros(2), np.zeros((1, 2))
    with pytest.raises(InvalidStep):
        sampled_tensor_gradient_check(parameters, analytic, 0.0, -1.0, 0, sum_of_squares)
    with pytest.raises(InvalidTolerance):
        sampled_tensor_gradient_check(parameters, analytic, 1e-5, -1.0, 0, sum_of_squares)
    with pytest.raises(GradientShapeMismatch) as caught:
        sampled_tensor_gradient_check(parameters, analytic, 1e-5, 1e-6, 0, sum_of_squares)
    # Chapter figure: "shape mismatch [2] != [1,2]".
    assert str(caught.value) == "parameter shape [2] does not match analytic-gradient shape [1, 2]"
    with pytest.raises(ZeroSamples):
        sampled_tensor_gradient_check(parameters, np.zeros(2), 1e-5, 1e-6, 0, sum_of_squares)
    with pytest.raises(EmptyTensor):
        sampled_tensor_gradient_check(np.zeros((0, 3)), np.zeros((0, 3)), 1e-5, 1e-6, 4, sum_of_squares)


def test_array_problems_are_typed():
    read_only = np.zeros(3)
    read_only.flags.writeable = False
    with pytest.raises(ReadOnlyArray) as caught:
        sampled_tensor_gradient_check(read_only, np.zeros(3), 1e-5, 1e-6, 1, sum_of_squares)
    assert str(caught.value) == "parameters array is read-only; the check perturbs it in place and restores it"
    with pytest.raises(UnsupportedDtype) as caught:
        sampled_tensor_gradient_check(np.zeros(3, dtype=np.int64), np.zeros(3), 1e-5, 1e-6, 1, sum_of_squares)
    assert caught.value.role == "parameters" and caught.value.dtype == "int64"
    with pytest.raises(UnsupportedDtype) as caught:
        sampled_tensor_gradient_check(np.zeros(3), np.zeros(3, dtype=complex), 1e-5, 1e-6, 1, sum_of_squares)
    assert caught.value.role == "analytic"
    with pytest.raises(InvalidArgument) as caught:
        sampled_tensor_gradient_check([0.0, 1.0], np.zeros(2), 1e-5, 1e-6, 1, sum_of_squares)
    assert str(caught.value) == "parameters must be a numpy array, got list"


def test_errors_during_the_check_carry_the_coordinate():
    parameters = np.arange(6.0).reshape(2, 3)
    calls = []

    def objective(array):
        calls.append(1)
        return math.nan if len(calls) == 4 else sum_of_squares(array)

    before = parameters.tobytes()
    with pytest.raises(AtCoordinate) as caught:
        sampled_tensor_gradient_check(parameters, 2 * parameters, 1e-5, 1e-6, 4, objective)
    assert caught.value.coordinate == [0, 1]
    assert isinstance(caught.value.source, NonFiniteEvaluation) and caught.value.source.side == "minus"
    assert str(caught.value) == "gradient check at coordinate [0, 1] failed: minus function evaluation returned NaN"
    assert parameters.tobytes() == before


class Boom(Exception):
    pass


@pytest.mark.parametrize("exception", [Boom, KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("failing_call", range(1, 13))
def test_restored_bit_exactly_when_the_objective_raises_on_any_call(exception, failing_call):
    parameters = np.array([[-0.0, 1e-300, -1.5], [math.pi, 2.0**-1074, 7.0]])
    before = parameters.tobytes()
    calls = []

    def objective(array):
        calls.append(1)
        if len(calls) == failing_call:
            raise exception("stop")
        return sum_of_squares(array)

    with pytest.raises(exception):
        sampled_tensor_gradient_check(parameters, 2 * parameters, 1e-3, 1e-6, 4, objective)
    assert parameters.tobytes() == before
    assert len(calls) == failing_call


finite_arrays = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
    elements=st.floats(min_value=-1e6, max_value=1e6, allow_subnormal=True),
)


@given(finite_arrays, st.integers(min_value=1, max_value=10), st.integers(min_value=0, max_value=40))
def test_bit_identical_after_success_error_and_exception(parameters, samples, fail_at):
    before = parameters.tobytes()
    calls = []

    def objective(array):
        calls.append(1)
        if len(calls) == fail_at:
            raise Boom()
        if len(calls) == fail_at + 1:
            return math.inf
        return float(np.sum(np.sin(array)))

    try:
        check = sampled_tensor_gradient_check(parameters, np.cos(parameters), 1e-4, 1e-6, samples, objective)
    except (Boom, AtCoordinate):
        pass
    else:
        assert len(calls) == 3 * len(check.checks) == 3 * min(samples, parameters.size)
    assert parameters.tobytes() == before


@given(finite_arrays, st.integers(min_value=1, max_value=10))
def test_objective_called_exactly_three_times_per_sample(parameters, samples):
    seen = []
    original = parameters.copy()

    def objective(array):
        moved = np.flatnonzero(array.ravel() != original.ravel())
        seen.append(tuple(moved))
        return float(np.sum(array))

    check = sampled_tensor_gradient_check(parameters, np.ones_like(parameters), 1e-3, 1e-6, samples, objective)
    count = min(samples, parameters.size)
    assert len(seen) == 3 * count
    for k, record in enumerate(check.checks):
        # minus and plus move exactly the selected element; the center moves nothing.
        assert seen[3 * k] == seen[3 * k + 2] == (record.flat_index,)
        assert seen[3 * k + 1] == ()


# --- the sample count is validated once, for the sampler and both checks ------------------------


def test_a_numpy_sample_count_is_used_as_a_python_int():
    # np.int64 arithmetic would overflow on k·(N − 1) = 2·(2⁶³ − 2); Python ints are exact.
    n = 2**63 - 1
    assert offsets([n], np.int64(3)) == [0, (n - 1) // 2, n - 1]
    check = sampled_tensor_gradient_check(np.arange(4.0), 2 * np.arange(4.0), 1e-5, 1e-6, np.int64(3), sum_of_squares)
    assert type(check.requested_samples) is int and check.requested_samples == 3
    assert check.to_dict()["requested_samples"] == 3


@pytest.mark.parametrize(
    "samples, error_type, message",
    [
        (0, ZeroSamples, "sampled tensor gradient check needs at least one sample"),
        (-2, InvalidArgument, "requested samples must be a positive whole number, got -2"),
        (True, InvalidArgument, "requested samples must be a positive whole number, got True"),
        (2.0, InvalidArgument, "requested samples must be a positive whole number, got 2.0"),
        ("all", InvalidArgument, "requested samples must be a positive whole number, got 'all'"),
    ],
)
def test_a_bad_sample_count_is_typed(samples, error_type, message):
    with pytest.raises(error_type) as caught:
        sample_tensor_coordinates([2, 3], samples)
    assert str(caught.value) == message
    with pytest.raises(error_type) as caught:
        sampled_tensor_gradient_check(np.zeros(3), np.zeros(3), 1e-5, 1e-6, samples, sum_of_squares)
    assert str(caught.value) == message


# --- the tensor check validates its arrays like check_gradients ---------------------------------


@pytest.mark.parametrize("gradient", [np.float64(3.0), np.float32(3.0), 3.0, 3])
def test_a_scalar_gradient_of_a_zero_dimensional_parameter(gradient):
    # np.cos(np.array(0.0)) is an np.float64: check_gradients accepts it, and so does the tensor check.
    parameters = np.array(1.5)
    check = sampled_tensor_gradient_check(parameters, gradient, 1e-5, 1e-6, 1, sum_of_squares)
    assert check.passed and [record.coordinate for record in check.checks] == [()]
    assert check.checks[0].comparison.analytic == 3.0


def _scalar_records(parameters, analytic, step, tolerance, samples, objective):
    """The chapter's records by its scalar pieces, one coordinate at a time: plan_coordinates,
    probing_objective, central_difference, compare_gradients."""
    from gradcheck_cli.chapter.sampled import CoordinateGradientCheck
    from gradcheck_cli.engine.dtypes import probe_dtype
    from gradcheck_cli.engine.estimator import central_difference, compare_gradients
    from gradcheck_cli.engine.tensors import plan_coordinates, probing_objective

    selected = sample_tensor_coordinates(parameters.shape, samples)
    planned = plan_coordinates(parameters, analytic, selected, probe_dtype(parameters.dtype), step)
    records = []
    for coordinate in planned:
        evaluate = probing_objective(parameters, coordinate.sample.coordinate, objective)
        difference = central_difference(coordinate.point, coordinate.step, evaluate, coordinate.geometry)
        comparison = compare_gradients(coordinate.analytic, difference.derivative, tolerance)
        sample = coordinate.sample
        records.append(CoordinateGradientCheck(sample.flat_index, sample.coordinate, difference, comparison))
    return records


def _record_bits(record) -> list:
    """Every float of a record as its bit pattern (so that -0.0 and 0.0 differ), the rest as is."""
    from gradcheck_cli.core.record import float_bits

    def leaves(value):
        if isinstance(value, dict):
            return [leaf for key in value for leaf in [key, *leaves(value[key])]]
        if isinstance(value, list):
            return [leaf for item in value for leaf in leaves(item)]
        return [("float", float_bits(value)) if isinstance(value, float) else value]

    return leaves(record.to_dict())


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(["float64", "float32"] + (["bfloat16"] if bfloat16 else [])),
    shape=st.sampled_from([(), (5,), (3, 4), (2, 3, 2)]),
    transposed=st.booleans(),
    samples=st.integers(min_value=1, max_value=30),
    scale=st.sampled_from([1.0, 1e-3, 1e200, 1e305]),
    returns=st.sampled_from(["float", "numpy", "float32"]),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_the_records_are_the_scalar_codes_bit_for_bit(dtype, shape, transposed, samples, scale, returns, seed):
    # The check builds its records from numpy columns: every field equals what the chapter's scalar
    # pieces compute coordinate by coordinate, for every dtype, layout and size of f's values (a
    # scale of 1e305 puts them beyond the bound below which a value needs no other check).
    random = np.random.default_rng(seed)
    stored = bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    values = random.standard_normal(shape[::-1] if transposed else shape)
    parameters = np.asarray(values, dtype=stored)
    parameters = parameters.T if transposed else parameters
    analytic = np.asarray(random.standard_normal(parameters.shape))
    convert = {"float": float, "numpy": np.float64, "float32": lambda v: float(np.float32(v))}[returns]
    scale = 1.0 if returns == "float32" else scale  # float32 values past 3.4e38 are inf: another test

    def objective(array):
        return convert(scale * float(np.sum(np.sin(np.asarray(array, dtype=np.float64)))))

    # bfloat16's half ulp on [4, 8) is 2⁻⁶ ≈ 0.016: a step of 0.01 rounds a normal draw of 4.56 back to θ.
    step = {"float64": 1e-5, "float32": 1e-2}.get(dtype, 5e-2)
    before = np.array(parameters, copy=True)
    result = sampled_tensor_gradient_check(parameters, analytic, step, 1e-6, samples, objective)
    expected = _scalar_records(parameters, analytic, step, 1e-6, samples, objective)
    assert [_record_bits(record) for record in result.checks] == [_record_bits(record) for record in expected]
    assert result.checks == tuple(expected) and result.passed == all(r.comparison.passed for r in expected)
    assert np.array_equal(
        before.reshape(-1).view(np.uint8), np.ascontiguousarray(parameters).reshape(-1).view(np.uint8)
    )


def test_values_beyond_the_quiet_bound_still_raise_the_chapters_slope_error_after_the_third_call():
    # f = ±1.7e308 on either side of θ: finite values whose slope overflows; the check raises at
    # the coordinate right after its third call, as the scalar code does.
    calls = []

    def objective(array):
        calls.append(float(array[1]))
        return 1.7e308 if array[1] > 1.0 else -1.7e308 if array[1] < 1.0 else 0.0

    parameters = np.arange(4.0)
    with pytest.raises(AtCoordinate, match=r"coordinate \[1\] failed: minus one-sided slope is not finite"):
        sampled_tensor_gradient_check(parameters, np.zeros(4), 1e-5, 1e-6, 4, objective)
    assert len(calls) == 6 and parameters.tolist() == [0.0, 1.0, 2.0, 3.0]
