"""Results are frozen dataclasses: the cheap ``record`` declaration keeps every dataclass promise."""

import copy
import dataclasses
import math
import pickle
import subprocess
import sys

import pytest

from gradcheck_cli.chapter import quadratic_gradient_check
from gradcheck_cli.estimator import GradientComparison, compare_gradients
from gradcheck_cli.records import float_bits, same_bits


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
        "analytic", "numerical", "absolute_error", "scale", "scaled_error", "tolerance", "passed",
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


def fresh_interpreter(code: str) -> str:
    """Run ``code`` in a new Python, where nothing has imported dataclasses yet; its stdout."""
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_the_dataclass_machinery_waits_for_first_use():
    # Start-up: declaring and using records must not import dataclasses; the first
    # dataclasses.fields() call then makes the class a dataclass like any other.
    code = (
        "import sys\n"
        "from gradcheck_cli.chapter import quadratic_gradient_check\n"
        "check = quadratic_gradient_check(5.5)\n"
        "assert check.comparison.passed is False and 'dataclasses' not in sys.modules, sorted(sys.modules)\n"
        "import dataclasses\n"
        "print([field.name for field in dataclasses.fields(check.difference)][:2])\n"
    )
    assert fresh_interpreter(code) == "['point', 'requested_step']\n"


def test_every_result_class_becomes_the_dataclass_its_fields_say():
    import importlib
    import importlib.util
    import pkgutil

    import gradcheck_cli
    from gradcheck_cli.records import Record

    for module in pkgutil.iter_modules(gradcheck_cli.__path__):
        if module.name == "__main__":  # that one runs the command line
            continue
        if module.name == "torch" and importlib.util.find_spec("torch") is None:  # the optional extra's module
            continue
        importlib.import_module(f"gradcheck_cli.{module.name}")
    classes = Record.__subclasses__()
    assert len(classes) >= 20  # every module's results, found
    for cls in classes:
        assert dataclasses.is_dataclass(cls), cls
        assert tuple(field.name for field in dataclasses.fields(cls)) == cls._field_names, cls
    assert not dataclasses.is_dataclass(Record)


def test_match_and_replace_work_before_the_dataclass_machinery_runs():
    code = (
        "import copy, sys\n"
        "from gradcheck_cli.estimator import GradientComparison, compare_gradients\n"
        "comparison = compare_gradients(5.5, 6.0, 1e-6)\n"
        "match comparison:\n"
        "    case GradientComparison(analytic, numerical):\n"
        "        print(analytic, numerical)\n"
        "relaxed = comparison.__replace__(tolerance=1.0)\n"
        "print(relaxed.tolerance, relaxed.analytic, 'dataclasses' in sys.modules)\n"
    )
    assert fresh_interpreter(code) == "5.5 6.0\n1.0 5.5 False\n"
    comparison = compare_gradients(5.5, 6.0, 1e-6)
    if hasattr(copy, "replace"):  # Python 3.13
        assert copy.replace(comparison, passed=True).passed is True


def test_a_record_is_declared_plainly():
    from typing import ClassVar

    from gradcheck_cli.records import Record, record

    @record
    class Pair(Record):
        first: float
        second: float

    assert Pair(1.0, 2.0).second == 2.0 and Pair.__match_args__ == ("first", "second")
    with pytest.raises(TypeError, match="must extend Record directly"):

        @record
        class Triple(Pair):
            third: float

    with pytest.raises(TypeError, match=r"no class variables or defaults: \['unit', 'scale'\]"):

        @record
        class Measured(Record):
            value: float
            unit: ClassVar[str]
            scale: float = 1.0
