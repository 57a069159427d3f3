"""Results are frozen dataclasses sharing one ``to_dict()``: equality, frozenness, match and replace work."""

import copy
import dataclasses
import math
import pickle

import pytest

from gradcheck_cli.chapter.fixtures import quadratic_gradient_check
from gradcheck_cli.core.record import float_bits, same_bits
from gradcheck_cli.engine.estimator import GradientComparison, compare_gradients


def test_results_are_frozen():
    comparison = compare_gradients(5.5, 6.0, 1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        comparison.passed = True
    with pytest.raises(dataclasses.FrozenInstanceError):
        del comparison.scale
    assert comparison.passed is False


def test_results_are_dataclasses_with_the_chapters_fields_in_order():
    assert dataclasses.is_dataclass(GradientComparison)
    assert [field.name for field in dataclasses.fields(GradientComparison)] == [
        "analytic",
        "numerical",
        "absolute_error",
        "scale",
        "scaled_error",
        "tolerance",
        "passed",
    ]


def test_equality_hash_and_repr_follow_the_fields():
    first, second = compare_gradients(5.5, 6.0, 1e-6), compare_gradients(5.5, 6.0, 1e-6)
    assert first == second and hash(first) == hash(second) and first is not second
    assert first != compare_gradients(5.5, 6.0, 1e-3)
    assert first != tuple(dataclasses.astuple(first))
    assert repr(first) == (
        "GradientComparison(analytic=5.5, numerical=6.0, absolute_error=0.5, scale=6.0, "
        "scaled_error=0.08333333333333337, tolerance=1e-06, passed=False)"
    )


def test_replace_copy_and_pickle_round_trip():
    check = quadratic_gradient_check(5.5)
    relaxed = dataclasses.replace(check.comparison, tolerance=1.0, passed=True)
    assert (relaxed.tolerance, relaxed.passed, relaxed.scaled_error) == (1.0, True, check.comparison.scaled_error)
    assert pickle.loads(pickle.dumps(check)) == check
    assert copy.deepcopy(check) == check
    assert dataclasses.asdict(check)["comparison"]["analytic"] == 5.5


def test_constructor_takes_exactly_the_fields():
    with pytest.raises(TypeError):
        GradientComparison(1.0, 1.0, 0.0, 1.0, 0.0, 1e-6)
    with pytest.raises(TypeError):
        GradientComparison(1.0, 1.0, 0.0, 1.0, 0.0, 1e-6, True, extra=1)


def test_bits_tell_signed_zeros_and_nan_payloads_apart():
    assert not same_bits(0.0, -0.0) and same_bits(math.nan, math.nan)
    assert float_bits(1.0) == 0x3FF0000000000000


def test_every_result_class_is_a_frozen_dataclass_whose_to_dict_follows_its_fields():
    import importlib
    import importlib.util
    import pkgutil

    import gradcheck_cli
    from gradcheck_cli.core.record import Record

    for module in pkgutil.walk_packages(gradcheck_cli.__path__, "gradcheck_cli."):
        name = module.name.removeprefix("gradcheck_cli.")
        if name == "__main__":  # that one runs the command line
            continue
        extras = {"torch", "jax"} & set(name.split("."))  # torch, adapters.torch.views, jax: the optional extras
        if any(importlib.util.find_spec(extra) is None for extra in extras):
            continue
        importlib.import_module(module.name)
    classes = Record.__subclasses__()
    assert len(classes) >= 20  # every module's results, found
    for cls in classes:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls
    check = quadratic_gradient_check(5.5)
    assert list(check.to_dict()) == ["difference", "comparison"]
    assert list(check.to_dict()["difference"])[:3] == ["theta", "requested_h", "theta_minus"]
    assert not dataclasses.is_dataclass(Record)


def test_the_records_made_once_per_tensor_coordinate_have_no_instance_dictionary():
    import numpy as np

    from gradcheck_cli.chapter.sampled import sampled_tensor_gradient_check

    check = sampled_tensor_gradient_check(np.ones(3), 2 * np.ones(3), 1e-5, 1e-6, 2, lambda p: float(p @ p))
    assert check.passed
    assert not hasattr(check.checks[0], "__dict__")
    assert hasattr(check, "__dict__")  # one per check: slots buy nothing there


def test_match_and_replace_work():
    comparison = compare_gradients(5.5, 6.0, 1e-6)
    match comparison:
        case GradientComparison(analytic, numerical):
            assert (analytic, numerical) == (5.5, 6.0)
        case _:
            pytest.fail("a GradientComparison matches its own class pattern")
    relaxed = dataclasses.replace(comparison, tolerance=1.0)
    assert (relaxed.tolerance, relaxed.analytic) == (1.0, 5.5)
    if hasattr(copy, "replace"):  # Python 3.13
        assert copy.replace(comparison, passed=True).passed is True


def test_to_dict_makes_non_finite_floats_strings():
    comparison = GradientComparison(math.inf, -math.inf, math.nan, 1.0, 0.0, 1e-6, False)
    assert comparison.to_dict() == {
        "analytic": "inf",
        "numerical": "-inf",
        "absolute_error": "NaN",
        "scale": 1.0,
        "scaled_error": 0.0,
        "tolerance": 1e-06,
        "pass": False,
    }


def test_records_from_rows_are_the_constructors_records_in_every_respect():
    from gradcheck_cli.chapter.sampled import CoordinateGradientCheck
    from gradcheck_cli.core.record import records_from_rows
    from gradcheck_cli.engine.estimator import CentralDifference

    # A non-slotted record (an instance dictionary) and a slotted one holding it.
    difference = compare_gradients(5.5, 6.0, 1e-6)
    rows = [(5.5, 6.0, 0.5, 6.0, 0.08333333333333337, 1e-6, False), (-0.0, 0.0, 0.0, 1.0, 0.0, 0.0, True)]
    for built, made in zip(records_from_rows(GradientComparison, rows), [GradientComparison(*row) for row in rows]):
        assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
        assert vars(built) == vars(made) and list(vars(built)) == list(vars(made))
        assert pickle.loads(pickle.dumps(built)) == made and copy.deepcopy(built) == made
        assert dataclasses.replace(built, passed=True) == dataclasses.replace(made, passed=True)
        assert same_bits(built.analytic, made.analytic)  # -0.0 stays -0.0
        with pytest.raises(dataclasses.FrozenInstanceError):
            built.passed = True
    checks = records_from_rows(CoordinateGradientCheck, [(3, (1, 0), None, difference)])
    assert checks == [CoordinateGradientCheck(3, (1, 0), None, difference)] and not hasattr(checks[0], "__dict__")
    assert checks[0].to_dict()["comparison"] == difference.to_dict()
    assert records_from_rows(CentralDifference, []) == []

    @dataclasses.dataclass(frozen=True)
    class Checked:
        value: float

        def __post_init__(self):
            raise ValueError

    with pytest.raises(TypeError, match="has a __post_init__"):
        records_from_rows(Checked, [(1.0,)])


@pytest.mark.parametrize("layout", ["contiguous", "strided", "numpy"])
def test_same_array_bits_tells_every_bit_apart_with_or_without_the_c_librarys_memcmp(layout, monkeypatch):
    """-0.0 is not 0.0 and one NaN payload is not another, whether the bytes are compared by memcmp (two
    C-contiguous arrays) or by numpy (any other layout, or no C library to load)."""
    import numpy as np

    from gradcheck_cli.engine import blocks as records

    if layout == "numpy":
        monkeypatch.setattr(records, "byte_comparison", lambda: None)
    base = np.linspace(-1.0, 1.0, 2 * 70_001)
    first = base[::2] if layout == "strided" else base[:70_001]
    assert records.same_array_bits(first, first.copy())
    for position, value in [
        (0, -0.0 if first[0] == 0.0 else 0.0),
        (69_999, np.nan),
        (35_000, first[35_000] * (1 + 2**-52)),
    ]:
        second = first.copy()
        second[position] = value
        assert not records.same_array_bits(first, second)
    quiet, signalling = np.array([np.nan]), np.array([np.nan])
    signalling.view(np.uint64)[0] ^= np.uint64(1)  # numpy 1.x does not mix uint64 with a Python int
    assert records.same_array_bits(quiet, quiet.copy()) and not records.same_array_bits(quiet, signalling)
    assert not records.same_array_bits(np.zeros(3), np.zeros(4)) and records.same_array_bits(np.zeros(0), np.zeros(0))
