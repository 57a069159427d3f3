"""Robustness: bad input never crashes, every failure restores every bit, Ctrl-C is one line.

Three parts (issue 6, "Robustness"):

1. A battery of bad inputs for every subcommand. Each one must exit 2 with
   exactly one ``Error: …`` line on stderr that names the problem, no
   traceback, nothing on stdout; with ``--json`` the same line on stderr and
   nothing on stdout but one strict JSON document ``{"error": to_dict()}``.
   The table is (command line, key phrases of the message, acceptable error
   kinds). Kinds are the library's error class names; a wrapped error
   (AtParameter, AtCoordinate) matches when the kind appears anywhere on its
   ``source`` chain. ``{tmp}`` in a command line is the temporary directory
   where the input files and problem files are written.
2. Restoration: ``check_gradients`` and ``check_taylor`` with an objective
   that fails on the k-th call, for every k, in every way (an exception, a
   KeyboardInterrupt, a NaN, a non-scalar): the exception propagates
   unchanged and every array is bit-identical afterwards (-0.0 and
   subnormals included).
3. Ctrl-C: an interrupted ``gradcheck check`` exits 130 with one line.

A known defect may be recorded as a strict xfail whose reason says what
happens and what should: it fails the suite the moment it is fixed, so its
mark can be removed.
"""

import json
import math
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from extras import installed, reason
from gradcheck_cli.chapter import fixtures
from gradcheck_cli.check import check_gradients
from gradcheck_cli.cli.app import EXIT_BAD_INPUT, EXIT_INTERNAL_ERROR, EXIT_INTERRUPTED, main
from gradcheck_cli.errors import AtCoordinate, AtParameter, GradCheckError, NonFiniteEvaluation, NonScalarEvaluation
from gradcheck_cli.problem import GradientProblem
from gradcheck_cli.taylor.remainder import check_taylor

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------ helpers


def invoke(arguments):
    runner = CliRunner(env={"NO_COLOR": "1", "COLUMNS": None, "FORCE_COLOR": None})
    return runner.invoke(main, list(arguments), prog_name="gradcheck", catch_exceptions=False)


def parse_strictly(text):
    """RFC 8259 only: a NaN, Infinity or -Infinity token is an error, not a float."""

    def reject(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=reject)


def kinds_on_chain(error: dict) -> list:
    """The ``kind`` of an error's to_dict() and of every ``source`` it wraps."""
    kinds = []
    while isinstance(error, dict):
        kinds.append(error.get("kind"))
        error = error.get("source")
    return kinds


def only_error_line(result) -> str:
    """The message of the single ``Error: …`` line on stderr (asserting that it is one line)."""
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stderr.startswith("Error: "), result.stderr
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, repr(result.stderr)
    assert "\r" not in result.stderr
    return result.stderr[len("Error: ") : -1]


# ------------------------------------------------------------- input files

PROBLEMS_SOURCE = '''
"""Gradient problems that go wrong in every way gradcheck must refuse politely."""

import numpy as np

from gradcheck_cli import GradientProblem


def squares(parameters):
    return float(sum(np.sum(np.asarray(array, dtype=np.float64) ** 2) for array in parameters.values()))


def _problem(w, gradient=None, objective=squares):
    w = np.asarray(w)
    return GradientProblem(objective, {"w": w}, {"w": 2 * w if gradient is None else gradient})


def problem():
    return _problem(np.array([1.0, -2.0, 0.5]))


def raises():
    raise RuntimeError("no training data\\nin this directory")


def returns_none():
    return None


def returns_pair():
    w = np.array([1.0, 2.0])
    return squares, {"w": w}


def returns_dict():
    w = np.array([1.0, 2.0])
    return {"objective": squares, "parameters": {"w": w}, "gradients": {"w": 2 * w}}


def returns_uncallable_objective():
    w = np.array([1.0, 2.0])
    return 1.0, {"w": w}, {"w": 2 * w}


def nan_parameters():
    return _problem(np.array([1.0, np.nan, 2.0]), np.array([2.0, 0.0, 4.0]))


def nan_parameters_masked():
    # An objective that never sees the NaN: only a check of the parameters themselves finds it.
    return _problem(np.array([1.0, np.nan, 2.0]), np.array([2.0, 0.0, 4.0]),
                    objective=lambda parameters: float(np.nansum(parameters["w"] ** 2)))


def inf_gradient():
    return _problem(np.array([1.0, 2.0, 3.0]), np.array([2.0, np.inf, 6.0]))


def mismatched_shapes():
    return _problem(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0]))


def complex_parameters():
    # complex128 and complex64 are checked as their real and imaginary parts; a wider complex is not.
    w = np.array([1.0 + 1.0j, 2.0], dtype=np.clongdouble)
    return GradientProblem(lambda p: float(np.sum(np.abs(p["w"]) ** 2)), {"w": w}, {"w": np.array([2.0, 4.0])})


def bool_gradient():
    return _problem(np.array([1.0, 2.0]), np.array([True, False]))


def string_parameters():
    return GradientProblem(squares, {"w": np.array(["1.0", "2.0"])}, {"w": np.array([2.0, 4.0])})


def integer_parameters():
    return _problem(np.array([1, 2, 3]), np.array([2.0, 4.0, 6.0]))


def read_only():
    w = np.array([1.0, 2.0])
    w.flags.writeable = False
    return _problem(w, np.array([2.0, 4.0]))


def no_parameters():
    return squares, {}, {}


def missing_gradient():
    return squares, {"w": np.array([1.0, 2.0])}, {}


def extra_gradient():
    w = np.array([1.0, 2.0])
    return squares, {"w": w}, {"w": 2 * w, "v": np.zeros(2)}


def empty_parameter():
    return _problem(np.zeros(0))


def objective_raises():
    def objective(parameters):
        raise ValueError("objective exploded\\nwhile reading w")

    return _problem(np.array([1.0, 2.0]), objective=objective)


def objective_nan():
    return _problem(np.array([1.0, 2.0]), objective=lambda parameters: float("nan"))


def objective_inf():
    return _problem(np.array([1.0, 2.0]), objective=lambda parameters: float("inf"))


def objective_array():
    return _problem(np.array([1.0, 2.0]), objective=lambda parameters: np.ones(2))


def objective_none():
    return _problem(np.array([1.0, 2.0]), objective=lambda parameters: None)


def objective_string():
    return _problem(np.array([1.0, 2.0]), objective=lambda parameters: "1.5")


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("this exception cannot be described")


def objective_exits():
    def objective(parameters):
        raise SystemExit(3)

    return _problem(np.array([1.0, 2.0]), objective=objective)


def objective_unprintable():
    def objective(parameters):
        raise Unprintable()

    return _problem(np.array([1.0, 2.0]), objective=objective)


def unprintable():
    raise Unprintable()


def chatty_objective():
    def objective(parameters):
        print("loss computed")
        return squares(parameters)

    return _problem(np.array([1.0, 2.0]), objective=objective)


NOT_A_FUNCTION = 7
'''


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    """Every malformed input file the battery names, written once into a temporary directory."""
    tmp_path = tmp_path_factory.mktemp("bad-inputs")
    np.save(tmp_path / "ok.npy", np.zeros((2, 3)))
    npy = (tmp_path / "ok.npy").read_bytes()
    files = {
        "empty.npy": b"",
        "blank.json": b"  \n",
        "truncated.npy": npy[:40],
        "magic-only.npy": npy[:6],
        "empty-list.json": b"[]",
        "ragged.json": b"[[0, 1, 2], [3]]",
        "object.json": b'{"logits": [[0, 1, 2]]}',
        "strings.json": b'[["a", "b", "c"], ["d", "e", "f"]]',
        "infinite.json": b"[[0, Infinity, 1], [2, 0, -2]]",
        "overflowing.json": b"[[1e999, 0, 0], [0, 0, 0]]",
        "nan-gradient.json": b"[[NaN, 0, 0], [0, 0, 0]]",
        "problems.py": PROBLEMS_SOURCE.encode(),
        "broken.py": b"def problem(:\n",
        "no_functions.py": b"",
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    arrays = {
        "complex.npy": np.ones((2, 3), dtype=complex),
        "bool.npy": np.ones((2, 3), dtype=bool),
        "strings.npy": np.array([["a", "b", "c"], ["d", "e", "f"]]),
        "longdouble.npy": np.ones((2, 3), dtype=np.longdouble),
        "vector.npy": np.ones(3),
        "cube.npy": np.ones((2, 3, 1)),
        "no-columns.npy": np.ones((2, 0)),
        "scalar.npy": np.float64(1.0),
    }
    for name, array in arrays.items():
        np.save(tmp_path / name, array)
    return tmp_path


# ------------------------------------------------------------- the battery


@dataclass(frozen=True)
class Bad:
    """One bad command line: the key phrases of its one-line message and its acceptable error kinds."""

    command: str
    phrases: tuple
    kinds: frozenset  # empty: any kind (the CLI's own class for an objective's exception is not fixed)
    json: bool = True  # also run it with --json (not for the format options themselves)

    def arguments(self, directory: Path) -> list:
        import shlex

        return [word.replace("{tmp}", str(directory)) for word in shlex.split(self.command)]


def bad(command, phrases, kinds=(), json=True, skip=None):
    """A battery row.

    ``skip`` is (condition, reason) for a row that does not apply on this platform.
    """
    phrases = (phrases,) if isinstance(phrases, str) else tuple(phrases)
    kinds = frozenset((kinds,) if isinstance(kinds, str) else kinds)
    marks = [] if skip is None else [pytest.mark.skipif(skip[0], reason=skip[1])]
    return pytest.param(Bad(command, phrases, kinds, json), id=command, marks=marks)


NO_MATPLOTLIB = (not installed("matplotlib"), reason("matplotlib"))  # without it, the plot is refused first
CLICK = "CommandLineError"
FILE = "InputFileError"
STEP, POINT, TOLERANCE = "InvalidStep", "NonFinitePoint", "InvalidTolerance"
POSITIVE_STEP = "must be positive and finite"
CONFLICT = "--json conflicts with --format table; choose one output format"
BOGUS_FORMAT = "Invalid value for '--format': 'bogus' is not one of 'text', 'json', 'table'."

OUTPUT_OPTION_CASES = [
    # The shared output options, on every subcommand: text only (a --json here is the point of the case).
    row
    for command, rest in [
        ("demo", ""),
        ("quadratic", ""),
        ("scan", ""),
        ("identity", ""),
        ("kink", ""),
        ("nll", ""),
        ("sample", " --shape 2,3"),
    ]
    for row in (
        bad(f"{command}{rest} --format bogus", BOGUS_FORMAT, CLICK, json=False),
        bad(f"{command}{rest} --json --format table", CONFLICT, CLICK, json=False),
        bad(f"{command}{rest} --format table --json", CONFLICT, CLICK, json=False),
    )
] + [
    bad(f"{command} {{tmp}}/problems.py:problem {flags}", phrase, CLICK, json=False)
    for command in ("check", "taylor")
    for flags, phrase in [("--format bogus", BOGUS_FORMAT), ("--format table --json", CONFLICT)]
]

SCALAR_CASES = [
    bad("demo unexpected", "unexpected extra argument (unexpected)", CLICK),
    bad("quadratic --point inf", "gradient-check point inf must be finite", POINT),
    bad("quadratic --point=-inf", "gradient-check point -inf must be finite", POINT),
    bad("quadratic --step=-inf", f"requested step -inf {POSITIVE_STEP}", STEP),
    bad("quadratic --step 1e-400", f"requested step 0.0 {POSITIVE_STEP}", STEP),  # underflows to zero
    bad("quadratic --tolerance inf", "tolerance inf must be finite and nonnegative", TOLERANCE),
    bad("quadratic --analytic nan", "analytic gradient NaN must be finite", "NonFiniteAnalyticGradient"),
    bad("quadratic --analytic=-inf", "analytic gradient -inf must be finite", "NonFiniteAnalyticGradient"),
    bad(
        "quadratic --point 1e308 --step 1e308",
        "plus perturbation from point 1e308 by step 1e308 is not finite",
        "PerturbationNotFinite",
    ),
    bad(
        "quadratic --point 1e300 --step 1e300 --analytic 1",
        "center function evaluation returned inf",
        "NonFiniteEvaluation",
    ),
    bad("quadratic --analytic", "Option '--analytic' requires an argument.", CLICK, json=False),
    bad("identity --point nan", "gradient-check point NaN must be finite", POINT),
    bad("identity --point inf", "gradient-check point inf must be finite", POINT),
    bad("identity --step=-1e-300", f"requested step -1e-300 {POSITIVE_STEP}", STEP),
    bad("identity --step 0", f"requested step 0.0 {POSITIVE_STEP}", STEP),
    bad("identity --tolerance=-1", "tolerance -1.0 must be finite and nonnegative", TOLERANCE),
    bad(
        "identity --point 1.7976931348623157e308 --step 1e292",
        "plus perturbation from point 1.7976931348623157e308 by step 1e292 is not finite",
        "PerturbationNotFinite",
    ),
    bad("kink --step=-0.0", f"requested step -0.0 {POSITIVE_STEP}", STEP),
    bad("kink --step 0", f"requested step 0.0 {POSITIVE_STEP}", STEP),
    bad("kink --point nan", "gradient-check point NaN must be finite", POINT),
    bad("kink --tolerance=-inf", "tolerance -inf must be finite and nonnegative", TOLERANCE),
    bad("kink --tolerance inf", "tolerance inf must be finite and nonnegative", TOLERANCE),
    bad("kink --point x", "Invalid value for '--point': 'x' is not a valid float.", CLICK),
]

SCAN_CASES = [
    bad("scan --steps 1,,2", "'' in '1,,2' is not a number", CLICK),
    bad("scan --steps ''", "Invalid value for '--steps': '' is empty", CLICK),
    bad("scan --steps ,", "'' in ',' is not a number", CLICK),
    bad("scan --steps '[1,2'", "'[1' in '[1,2' is not a number", CLICK),
    bad("scan --steps 1e-1,nan", f"requested step NaN {POSITIVE_STEP}", STEP),
    bad("scan --steps 1,-1", f"requested step -1.0 {POSITIVE_STEP}", STEP),
    bad("scan --steps 1e400", f"requested step inf {POSITIVE_STEP}", STEP),
    bad("scan --steps 1e-400", f"requested step 0.0 {POSITIVE_STEP}", STEP),
    bad("scan --tolerance nan", "tolerance NaN must be finite and nonnegative", TOLERANCE),
    bad("scan --point inf", "gradient-check point inf must be finite", POINT),
    # Every step collapses at 1e308, but a collapsed step is a rejected row of the scan (issue 13);
    # what is refused up front is the analytic value 3θ² − 2, which overflows there.
    bad("scan --point 1e308", "analytic gradient inf must be finite", "NonFiniteAnalyticGradient"),
    bad("scan --advise --point nan", "gradient-check point NaN must be finite", POINT),
    bad(
        "scan --plot {tmp}/scan.txt",
        "must end in .png or .svg",
        "UnsupportedPlotFormat",
    ),
    bad("scan --plot {tmp}/no-such-directory/scan.png", "no-such-directory", (), skip=NO_MATPLOTLIB),
]

SAMPLE_CASES = [
    bad("sample --shape 2,x", "'x' in '2,x' is not a whole number", CLICK),
    bad("sample --shape -1,3", "tensor shape [-1, 3] must contain only nonnegative whole numbers", "InvalidShape"),
    bad("sample --shape ''", "Invalid value for '--shape': '' is empty", CLICK),
    bad("sample --shape []", "Invalid value for '--shape': '[]' is empty", CLICK),
    bad("sample --shape ,", "'' in ',' is not a whole number", CLICK),
    bad("schema nope", "Invalid value for '[NAME]': 'nope' is not one of 'demo'", CLICK),
    bad("sample --shape 1.5", "'1.5' is not a whole number", CLICK),
    bad(
        "sample --shape 10000000000,10000000000",
        "sampled tensor shape overflows a signed 64-bit element count",
        "ShapeOverflow",
    ),
    bad(
        "sample --shape 99999999999999999999999",
        "sampled tensor shape overflows a signed 64-bit element count",
        "ShapeOverflow",
    ),
    bad("sample --shape 0", "sampled tensor gradient check needs at least one value", "EmptyTensor"),
    bad("sample --shape 3,0,2", "sampled tensor gradient check needs at least one value", "EmptyTensor"),
    bad(
        "sample --shape 2,3 --max-samples=-1",
        "requested samples must be a positive whole number, got -1",
        "InvalidArgument",
    ),
    bad(
        "sample --shape 2,3 --max-samples x",
        "Invalid value for '--max-samples' / '--samples': 'x' is not a valid integer.",
        CLICK,
    ),
    bad("sample", "Missing option '--shape'.", CLICK),
]

NLL_CASES = [
    bad("nll --samples 0", "sampled tensor gradient check needs at least one sample", "ZeroSamples"),
    bad("nll --samples=-1", "requested samples must be a positive whole number, got -1", "InvalidArgument"),
    bad("nll --step nan", f"requested step NaN {POSITIVE_STEP}", STEP),
    bad(
        "nll --step 1e-30",
        "at coordinate [0, 1] failed: minus perturbation from point 1.0 by step 1e-30 rounds back to the point",
        "PerturbationUnchanged",
    ),
    bad("nll --tolerance=-1", "tolerance -1.0 must be finite and nonnegative", TOLERANCE),
    bad("nll --targets=-1,0", "targets row 0 target -1 is not a class in 0..2", "InvalidTargets"),
    bad("nll --targets ''", "Invalid value for '--targets': '' is empty", CLICK),
    bad("nll --targets 0,2,1", "targets need one class per row: 2 rows, got 3 targets", "InvalidTargets"),
    bad(
        "nll --targets 0,99999999999999999999",
        "targets row 1 target 99999999999999999999 is not a class in 0..2",
        "InvalidTargets",
    ),
    bad("nll --logits {tmp}/missing.npy", "missing.npy' does not exist.", CLICK),
    bad("nll --analytic {tmp}/missing.json", "missing.json' does not exist.", CLICK),
    bad("nll --logits {tmp}/empty.npy", "empty.npy' is empty", FILE),
    bad("nll --logits {tmp}/blank.json", "blank.json' is empty", FILE),
    bad("nll --logits {tmp}/truncated.npy", "truncated.npy' is not a readable .npy array: ", FILE),
    bad("nll --logits {tmp}/magic-only.npy", "magic-only.npy' is not a readable .npy array: ", FILE),
    bad("nll --logits {tmp}/complex.npy", "must hold real numbers, got dtype complex128", FILE),
    bad("nll --logits {tmp}/bool.npy", "must hold real numbers, got dtype bool", FILE),
    bad("nll --logits {tmp}/strings.npy", "must hold real numbers, got dtype <U1", FILE),
    bad("nll --logits {tmp}/strings.json", "must hold real numbers, got dtype <U1", FILE),
    bad(
        "nll --logits {tmp}/longdouble.npy",
        f"must hold real numbers, got dtype {np.dtype(np.longdouble)}",
        FILE,
        skip=(np.dtype(np.longdouble).itemsize <= 8, "long double is float64 on this platform"),
    ),
    bad("nll --logits {tmp}/ragged.json", "is not a rectangular nested list of numbers", FILE),
    bad("nll --logits {tmp}/object.json", "is not a rectangular nested list of numbers", FILE),
    bad(
        "nll --logits {tmp}/vector.npy",
        "logits must be a nonempty [rows, vocab] array, got shape [3]",
        "InvalidLogits",
    ),
    bad("nll --logits {tmp}/cube.npy", "got shape [2, 3, 1]", "InvalidLogits"),
    bad("nll --logits {tmp}/no-columns.npy --targets 0,0", "got shape [2, 0]", "InvalidLogits"),
    bad("nll --logits {tmp}/scalar.npy", "got shape []", "InvalidLogits"),
    bad("nll --logits {tmp}/empty-list.json", "got shape [0]", "InvalidLogits"),
    bad("nll --logits {tmp}/infinite.json", "logits value at [0, 1] is not finite", "InvalidLogits"),
    bad("nll --logits {tmp}/overflowing.json", "logits value at [0, 0] is not finite", "InvalidLogits"),
    bad(
        "nll --analytic {tmp}/nan-gradient.json",
        "at coordinate [0, 0] failed: analytic gradient NaN must be finite",
        "NonFiniteAnalyticGradient",
    ),
    bad(
        "nll --analytic {tmp}/vector.npy",
        "parameter shape [2, 3] does not match analytic-gradient shape [3]",
        "GradientShapeMismatch",
    ),
    bad(
        "nll --analytic {tmp}/no-columns.npy",
        "parameter shape [2, 3] does not match analytic-gradient shape [2, 0]",
        "GradientShapeMismatch",
    ),
    bad("nll --analytic {tmp}/bool.npy", "must hold real numbers, got dtype bool", FILE),
    bad("nll --logits {tmp}", "is a directory.", CLICK),
]

# A problem file's function, for both `gradcheck check` and `gradcheck taylor`:
# (function, key phrases, kinds under check, kinds under taylor).
PROBLEM_FUNCTIONS = [
    (
        "raises",
        ("problems.py:raises() raised RuntimeError: no training data in this directory",),
        "ProblemFunctionRaised",
        "ProblemFunctionRaised",
    ),
    ("returns_none", ("problems.py:returns_none()", "got a value of type NoneType"), "NotAProblem", "NotAProblem"),
    ("returns_pair", ("got a tuple of length 2",), "NotAProblem", "NotAProblem"),
    ("returns_dict", ("got a value of type dict",), "NotAProblem", "NotAProblem"),
    ("returns_uncallable_objective", ("an objective of type float",), "NotAProblem", "NotAProblem"),
    ("NOT_A_FUNCTION", ("problems.py:NOT_A_FUNCTION must be callable, got int",), "InvalidArgument", "InvalidArgument"),
    ("nan_parameters", ("NaN",), "NonFinitePoint", "NonFinitePoint"),
    (
        "inf_gradient",
        ("at coordinate [1]", "analytic gradient inf must be finite"),
        "NonFiniteAnalyticGradient",
        "NonFiniteAnalyticGradient",
    ),
    (
        "mismatched_shapes",
        ("parameter shape [3] does not match analytic-gradient shape [2]",),
        "GradientShapeMismatch",
        "GradientShapeMismatch",
    ),
    (
        "complex_parameters",
        ("; the nearest is complex128: pass .astype('complex128')",),
        "UnsupportedDtype",
        "UnsupportedDtype",
    ),
    ("bool_gradient", ("array has dtype bool",), "UnsupportedDtype", "UnsupportedDtype"),
    (
        "string_parameters",
        ("expected float64, float32, float16, bfloat16, complex128 or complex64; the nearest is float64",),
        "UnsupportedDtype",
        "UnsupportedDtype",
    ),
    ("integer_parameters", ("array has dtype int64",), "UnsupportedDtype", "UnsupportedDtype"),
    ("read_only", ("array is read-only",), "ReadOnlyArray", "ReadOnlyArray"),
    ("no_parameters", ("the problem has no parameters to perturb",), "NoParameters", "NoParameters"),
    (
        "missing_gradient",
        ("the problem has no analytic gradient for parameter 'w'",),
        "MissingGradient",
        "MissingGradient",
    ),
    (
        "objective_raises",
        ("objective_raises raised ValueError: objective exploded while reading w",),
        "ObjectiveRaised",
        "ObjectiveRaised",
    ),
    ("objective_nan", ("function evaluation returned NaN",), "NonFiniteEvaluation", "NonFiniteEvaluation"),
    ("objective_inf", ("function evaluation returned inf",), "NonFiniteEvaluation", "NonFiniteEvaluation"),
    (
        "objective_array",
        ("function evaluation must return one real number, got ndarray of shape (2,)",),
        "NonScalarEvaluation",
        "NonScalarEvaluation",
    ),
    ("objective_none", ("must return one real number, got NoneType",), "NonScalarEvaluation", "NonScalarEvaluation"),
    ("objective_string", ("must return one real number, got str",), "NonScalarEvaluation", "NonScalarEvaluation"),
]

PROBLEM_REFERENCES = [
    ("{tmp}/missing.py:problem", "problem file {tmp}/missing.py does not exist", "ProblemFileNotFound"),
    ("{tmp}/problems.py", "must be FILE.py:FUNCTION or package.module:FUNCTION", "InvalidProblemReference"),
    ("{tmp}/problems.py:", "must be FILE.py:FUNCTION or package.module:FUNCTION", "InvalidProblemReference"),
    ("{tmp}/problems.py:no_such_function", "problems.py has no function no_such_function", "ProblemFunctionNotFound"),
    ("{tmp}/no_functions.py:problem", "no_functions.py has no function problem", "ProblemFunctionNotFound"),
    ("{tmp}/broken.py:problem", "broken.py raised SyntaxError", "ProblemImportFailed"),
    (
        "no_such_gradcheck_module:problem",
        "problem module no_such_gradcheck_module cannot be found",
        "ProblemModuleNotFound",
    ),
]


def _problem_cases(command):
    cases = [
        bad(f"{command} {{tmp}}/problems.py:{function}", phrases, check_kinds if command == "check" else taylor_kinds)
        for function, phrases, check_kinds, taylor_kinds in PROBLEM_FUNCTIONS
    ]
    cases += [bad(f"{command} {reference}", phrase, kind) for reference, phrase, kind in PROBLEM_REFERENCES]
    cases.append(bad(f"{command}", "Missing argument", CLICK))
    cases.append(
        bad(
            f"{command} {{tmp}}/problems.py:problem --param nope",
            "parameter 'nope' is not one of the problem's parameters ['w']",
            "UnknownParameter",
        )
    )
    return cases


GOOD = "{tmp}/problems.py:problem"
CHECK_CASES = (
    _problem_cases("check")
    + [
        bad(f"check {{tmp}}/problems.py:{function}", phrases, kinds)
        for function, phrases, kinds in [
            ("extra_gradient", "analytic gradient 'v' names no parameter of the problem", "UnexpectedGradient"),
            ("empty_parameter", "sampled tensor gradient check needs at least one value", "EmptyTensor"),
            ("nan_parameters_masked", ("at coordinate [1]", "point NaN must be finite"), "NonFinitePoint"),
        ]
    ]
    + [
        bad(f"check {GOOD} {options}", phrases, kinds)
        for options, phrases, kinds in [
            ("--samples 0", "sample", (CLICK, "ZeroSamples")),
            ("--samples=-3", ("sample", "-3"), (CLICK, "InvalidArgument")),
            ("--samples some", ("sample", "some"), (CLICK, "InvalidArgument")),
            ("--samples 1.5", ("sample", "1.5"), (CLICK, "InvalidArgument")),
            ("--step 0", f"requested step 0.0 {POSITIVE_STEP}", STEP),
            ("--step nan", f"requested step NaN {POSITIVE_STEP}", STEP),
            ("--step=-1e-3", f"requested step -0.001 {POSITIVE_STEP}", STEP),
            ("--step inf", f"requested step inf {POSITIVE_STEP}", STEP),
            ("--step automatic", "automatic", CLICK),
            ("--step 1e-300", "rounds back to the point", "PerturbationUnchanged"),
            ("--tolerance=-1", "tolerance -1.0 must be finite and nonnegative", TOLERANCE),
            ("--tolerance nan", "tolerance NaN must be finite and nonnegative", TOLERANCE),
            ("--tolerance inf", "tolerance inf must be finite and nonnegative", TOLERANCE),
            (
                "--param w --param nope",
                "parameter 'nope' is not one of the problem's parameters ['w']",
                "UnknownParameter",
            ),
        ]
    ]
)

TAYLOR_CASES = _problem_cases("taylor") + [
    bad(
        "taylor {tmp}/problems.py:empty_parameter",
        "Taylor-test direction norm 0.0 must be positive and finite",
        "ZeroDirection",
    ),
    bad(f"taylor {GOOD} --seed x", "Invalid value for '--seed': 'x' is not a valid integer.", CLICK),
    bad(f"taylor {GOOD} --seed 1.5", "'1.5' is not a valid integer", CLICK),
    bad(f"taylor {GOOD} --plot {{tmp}}/taylor.txt", "must end in .png or .svg", "UnsupportedPlotFormat"),
    bad(f"taylor {GOOD} --plot {{tmp}}/no-such-directory/taylor.svg", "no-such-directory", (), skip=NO_MATPLOTLIB),
]

BATTERY = OUTPUT_OPTION_CASES + SCALAR_CASES + SCAN_CASES + SAMPLE_CASES + NLL_CASES + CHECK_CASES + TAYLOR_CASES


def test_the_battery_covers_every_subcommand_with_at_least_forty_cases():
    by_command = {}
    for case in BATTERY:
        command = case.values[0].command.split()[0]
        by_command[command] = by_command.get(command, 0) + 1
    assert set(by_command) >= set(main.list_commands(None)) | {"check", "taylor"}
    assert len(BATTERY) >= 40
    assert len({case.id for case in BATTERY}) == len(BATTERY)  # ids are the command lines: none repeated


def _assert_names_the_problem(message: str, case: Bad, directory: Path):
    for phrase in case.phrases:
        assert phrase.replace("{tmp}", str(directory)) in message, f"{phrase!r} not in {message!r}"


@pytest.mark.parametrize("case", BATTERY)
def test_bad_input_exits_2_with_one_line_and_nothing_on_stdout(case, bad_files):
    result = invoke(case.arguments(bad_files))
    assert result.exit_code == EXIT_BAD_INPUT, (result.exit_code, result.stdout, result.stderr)
    message = only_error_line(result)
    _assert_names_the_problem(message, case, bad_files)
    assert result.stdout == ""


@pytest.mark.parametrize("case", [case for case in BATTERY if case.values[0].json])
def test_bad_input_with_json_prints_one_strict_error_document(case, bad_files):
    result = invoke([*case.arguments(bad_files), "--json"])
    assert result.exit_code == EXIT_BAD_INPUT, (result.exit_code, result.stdout, result.stderr)
    message = only_error_line(result)
    document = parse_strictly(result.stdout)
    assert list(document) == ["error"]
    error = document["error"]
    assert error["message"] == message
    assert isinstance(error["kind"], str) and error["kind"]
    if case.kinds:
        assert case.kinds & set(kinds_on_chain(error)), (sorted(case.kinds), kinds_on_chain(error))
    _assert_names_the_problem(error["message"], case, bad_files)
    # The document is exactly what the one JSON writer makes of it: nothing hand-assembled.
    assert result.stdout == json.dumps(document, indent=2, allow_nan=False) + "\n"


def test_taylor_rejects_a_nan_parameter_the_objective_never_sees(bad_files):
    result = invoke(["taylor", f"{bad_files}/problems.py:nan_parameters_masked"])
    assert result.exit_code == EXIT_BAD_INPUT, (result.exit_code, result.stderr)
    message = only_error_line(result)
    assert "NaN" in message and "[1]" in message


@pytest.mark.parametrize("command", ["check", "taylor"])
@pytest.mark.parametrize(
    "function, phrase",
    [
        ("objective_exits", "SystemExit"),
        ("objective_unprintable", "Unprintable"),
        ("unprintable", "Unprintable"),
    ],
)
def test_an_objective_or_problem_that_fails_oddly_is_still_one_line(bad_files, command, function, phrase):
    result = invoke([command, f"{bad_files}/problems.py:{function}"])
    assert result.exit_code == EXIT_BAD_INPUT, (result.exit_code, result.stderr)
    assert phrase in only_error_line(result)


@pytest.mark.parametrize("command", ["check", "taylor"])
def test_an_objective_that_prints_does_not_break_the_json_document(bad_files, command):
    result = invoke([command, f"{bad_files}/problems.py:chatty_objective", "--json"])
    assert result.exit_code == 0
    assert list(parse_strictly(result.stdout)) == [command]


# Usage errors that click finds while splitting the command line, before any option is
# converted; --json is on the command line, so the error is asked for as JSON too.
PARSE_TIME_USAGE_ERRORS = [
    (["quadratic", "--json", "--stp", "1"], "No such option '--stp'. Did you mean '--step'?"),
    (["demo", "--json", "--seed", "3"], "No such option '--seed'."),
    (["kink", "--json", "--step"], "Option '--step' requires an argument."),
]


@pytest.mark.parametrize("arguments, message", PARSE_TIME_USAGE_ERRORS)
def test_a_parse_time_usage_error_is_one_line_and_exit_2(arguments, message):
    result = invoke(arguments)
    assert result.exit_code == EXIT_BAD_INPUT
    assert only_error_line(result) == message


@pytest.mark.parametrize("arguments, message", PARSE_TIME_USAGE_ERRORS)
def test_a_parse_time_usage_error_with_json_prints_a_json_error(arguments, message):
    document = parse_strictly(invoke(arguments).stdout)
    assert document["error"]["kind"] == "CommandLineError" and document["error"]["message"] == message


@pytest.mark.parametrize(
    "arguments", [["demo", "--json", "--format", "bogus"], ["demo", "--format", "bogus", "--json"]]
)
def test_a_bogus_format_next_to_json_is_one_line_and_no_partial_output(arguments):
    result = invoke(arguments)
    assert result.exit_code == EXIT_BAD_INPUT
    assert only_error_line(result) == BOGUS_FORMAT
    # Which format the error takes is open (--json asks for JSON, --format for something else),
    # but stdout is nothing or one strict error document, never a partial result.
    if result.stdout:
        assert list(parse_strictly(result.stdout)) == ["error"]


# ---------------------------------------------------------- interruption


def _interrupt(*arguments, **keywords):
    raise KeyboardInterrupt


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_an_interrupted_command_exits_130_without_a_traceback(monkeypatch, output):
    monkeypatch.setattr(fixtures, "quadratic_gradient_check", _interrupt)
    result = invoke(["quadratic", *output])
    assert result.exit_code == EXIT_INTERRUPTED
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == ["Error: interrupted"]


def test_an_interrupted_command_writes_exactly_one_line(monkeypatch):
    # click's own handler echoes an empty line before "Aborted"; gradcheck's must not.
    monkeypatch.setattr(fixtures, "quadratic_gradient_check", _interrupt)
    assert invoke(["quadratic"]).stderr == "Error: interrupted\n"


# The real SIGINT to a running `gradcheck check` is tested in test_cli_user.py (in a pipe and on a
# terminal with the progress bar).


# ------------------------------------------------------------ restoration


class Boom(Exception):
    """The objective's own failure, which must come out of the checker unchanged."""


def restoration_parameters(bfloat16: bool = True) -> dict:
    """Arrays whose bits are easy to lose: -0.0, subnormals, a large value, a non-contiguous view.

    With ``bfloat16`` (when ml_dtypes is installed) a bfloat16 array too; the
    Taylor test then takes only 7 steps (ε = 2⁻⁷), without it 20.
    """
    base = np.array([[0.5, -0.0, 5e-324, -1e-310], [1e10, -2.5, 2.2250738585072014e-308, 3.0]], dtype=np.float64)
    parameters = {
        "w": base,
        "v": np.array([-0.0, 1e-45, -3.0, 0.25], dtype=np.float32),  # 1e-45: float32's smallest subnormal
        "t": np.array([[1.0, -0.0, 2.0], [-1.5, 7e-39, 0.125]], dtype=np.float32).T,  # a transposed view
    }
    try:
        import ml_dtypes
    except ImportError:  # bfloat16 is an optional extra
        return parameters
    if not bfloat16:
        return parameters
    parameters["b"] = np.array([-0.0, 0.5, -2.0], dtype=ml_dtypes.bfloat16)
    return parameters


def smooth(parameters) -> float:
    return float(sum(np.sum(np.sin(np.asarray(array, dtype=np.float64))) for array in parameters.values()))


def cosines(parameters) -> dict:
    return {name: np.cos(np.asarray(array, dtype=np.float64)) for name, array in parameters.items()}


def bits(arrays: dict) -> dict:
    return {name: (array.dtype.str, array.shape, array.tobytes()) for name, array in arrays.items()}


FAILURES = {
    "exception": lambda: Boom("the objective failed"),
    "KeyboardInterrupt": lambda: KeyboardInterrupt(),
    "NaN": lambda: float("nan"),
    "non-scalar": lambda: np.ones(2),
}


def failing_on_call(k, failure):
    """An objective that is smooth until its k-th call, which fails as ``failure`` says."""
    state = {"calls": 0, "raised": None}

    def objective(parameters):
        state["calls"] += 1
        if state["calls"] == k:
            outcome = FAILURES[failure]()
            if isinstance(outcome, BaseException):
                state["raised"] = outcome
                raise outcome
            return outcome
        return smooth(parameters)

    return objective, state


def assert_failure_came_out_unchanged(caught, state, failure):
    if failure in ("exception", "KeyboardInterrupt"):
        assert caught is state["raised"]  # the very object the objective raised
        assert caught.__context__ is None and caught.__cause__ is None
    else:
        expected = NonFiniteEvaluation if failure == "NaN" else NonScalarEvaluation
        while isinstance(caught, (AtParameter, AtCoordinate)):
            caught = caught.source
        assert isinstance(caught, expected), caught


def _checked_calls(run, build) -> int:
    calls = []

    def counting(parameters):
        calls.append(1)
        return smooth(parameters)

    run(counting, build())
    return len(calls)


def _first_pass_calls(report) -> list:
    """What each call of check_gradients' first pass was: f(θ), a coordinate's probe, a direction's."""
    total = report.checked
    checkpoints = {max(1, math.ceil(total * part / 3)) for part in (1, 2)}
    kinds, done = ["center"], 0
    for check in report.parameters:
        for _ in check.checks:
            kinds += ["coordinate", "coordinate"]
            done += 1
            if done in checkpoints:
                kinds.append("center")
        kinds += ["direction", "direction"]
    return [*kinds, "center"]


def _run_check(objective, parameters):
    return check_gradients(objective, parameters, cosines(parameters), samples=3)


def _run_taylor(objective, parameters):
    return check_taylor(GradientProblem(objective, parameters, cosines(parameters)))


@pytest.mark.parametrize("failure", sorted(FAILURES))
@pytest.mark.parametrize(
    "run, build, calls",
    [
        (_run_check, restoration_parameters, None),  # f(θ) + 2 per coordinate + checkpoints, directions, confirmations
        (_run_taylor, restoration_parameters, None),
        # f(x), 19 float32 steps, f(x); then its false first-order fail (steps from ‖x‖ ≈ 1e10) is
        # localized: {w, v} and {t} (float32, 21 calls each), {w} (float64, 42) and {v} (21).
        (_run_taylor, lambda: restoration_parameters(bfloat16=False), 21 + 21 + 21 + 42 + 21),
    ],
    ids=["check_gradients", "check_taylor", "check_taylor-float64-float32"],
)
def test_every_array_is_bit_identical_whichever_call_fails(run, build, calls, failure):
    total = _checked_calls(run, build)
    if calls is not None:
        assert total == calls
    expected = bits(build())
    for k in range(1, total + 1):
        parameters = build()
        gradients_before = bits(cosines(parameters))
        objective, state = failing_on_call(k, failure)
        try:
            result = run(objective, parameters)
        except (Boom, KeyboardInterrupt, GradCheckError) as error:
            assert state["calls"] == k, f"call {k}: the checker went on calling after the failure"
            assert_failure_came_out_unchanged(error, state, failure)
        else:
            # The Taylor test records a NaN at a step as a point ("non-finite value"), and a NaN
            # f(x) at the end as a failed determinism check; only a NaN f(x) first is an error.
            # check_gradients counts a NaN at a confirmation step as an unusable step; in the first
            # pass (f(θ), a coordinate's own step, the direction at its own step) it is an error.
            if run is _run_check:
                kinds = _first_pass_calls(result)
                assert failure == "NaN" and k > len(kinds), f"{failure} on call {k} ({kinds[k - 1]}) was not reported"
                assert state["calls"] == result.evaluations
            else:
                assert (run, failure) == (_run_taylor, "NaN") and k > 1, f"{failure} on call {k} was not reported"
                evaluated = sum(point.state in ("ok", "non-finite value") for point in result.points)
                assert state["calls"] == 2 + evaluated + result.localization_evaluations and result.points
        assert bits(parameters) == expected, f"{failure} on call {k} of {total} left a parameter changed"
        assert bits(cosines(parameters)) == gradients_before


def test_the_base_of_a_view_is_restored_too():
    base = np.array([[0.5, -0.0, 5e-324], [-1e-310, 2.0, -0.0]])
    parameters = {"column": base[:, 1], "row": base[1, ::2]}
    before = base.tobytes()
    for k in range(1, 3 * 4 + 1):
        objective, _ = failing_on_call(k, "KeyboardInterrupt")
        with pytest.raises(KeyboardInterrupt):
            check_gradients(objective, parameters, cosines(parameters), samples="all")
        assert base.tobytes() == before, k


def test_a_failing_progress_callback_leaves_every_array_bit_identical():
    expected = bits(restoration_parameters())
    total = 1 + sum(min(3, array.size) for array in restoration_parameters().values())
    for k in range(1, total + 1):
        parameters = restoration_parameters()
        seen = []
        raised = Boom(f"progress {k}")

        def progress(done, of):
            seen.append(done)
            if len(seen) == k:
                raise raised

        with pytest.raises(Boom) as caught:
            check_gradients(smooth, parameters, cosines(parameters), samples=3, progress=progress)
        assert caught.value is raised
        assert bits(parameters) == expected, k


def test_a_huge_parameter_makes_the_taylor_test_warn_nothing():
    w = np.array([1e300, 1.0])
    before = w.tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = check_taylor(GradientProblem(smooth, {"w": w}, cosines({"w": w})))
    assert result.verdict in ("passed", "failed", "inconclusive")
    assert w.tobytes() == before


def test_the_restoration_comparison_can_fail():
    # The bit comparison above sees what == would not: -0.0 against 0.0, and one subnormal ulp.
    first, second = restoration_parameters(), restoration_parameters()
    second["w"][0, 1] = 0.0
    assert np.array_equal(first["w"], second["w"]) and bits(first) != bits(second)
    second = restoration_parameters()
    second["w"][0, 2] = np.nextafter(5e-324, 1.0)
    assert bits(first) != bits(second)


# ------------------------------------------- gradcheck's own defects, and input that breaks parsers


def test_deeply_nested_json_input_is_bad_input_not_a_crash(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    result = invoke(["nll", "--logits", str(deep)])
    assert result.exit_code == EXIT_BAD_INPUT
    assert only_error_line(result) == f"--logits file '{deep}' nests its lists too deeply"


def test_a_defect_in_gradcheck_is_one_line_and_status_3_never_a_verdict(monkeypatch):
    def broken(*arguments, **keywords):
        raise ZeroDivisionError("a defect")

    monkeypatch.setattr(fixtures, "quadratic_gradient_check", broken)
    result = invoke(["quadratic"])
    assert result.exit_code == EXIT_INTERNAL_ERROR
    assert only_error_line(result) == "internal error in gradcheck: ZeroDivisionError: a defect"
    assert result.stdout == ""


def test_a_defect_in_gradcheck_is_not_blamed_on_the_users_objective(monkeypatch):
    # Before: everything raised inside the command's library call was reported as
    # "the objective of ... raised ...", gradcheck's own bugs included.
    import gradcheck_cli.taylor.remainder

    def broken(problem, **keywords):
        problem.objective(problem.parameters)  # the user's objective runs fine
        raise AttributeError("'float' object has no attribute 'astype'")

    # A defect of gradcheck's is raised in gradcheck's own files: an exception raised in the user's
    # files (a mapping's method, say) is the user's, status 2.
    broken.__code__ = broken.__code__.replace(co_filename=gradcheck_cli.taylor.remainder.__file__)
    monkeypatch.setattr(gradcheck_cli.taylor.remainder, "check_taylor", broken)
    result = invoke(["taylor", "fixtures/golden/inputs/portable.py:problem"])
    assert result.exit_code == EXIT_INTERNAL_ERROR
    message = only_error_line(result)
    assert message.startswith("internal error in gradcheck: AttributeError") and "objective" not in message


def test_json_before_the_subcommand_is_not_the_subcommands_format():
    result = invoke(["--json", "quadratic", "--bogus"])
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stdout == ""
    assert only_error_line(result).startswith("No such option '--json'.")


@pytest.mark.skipif(os.name != "posix", reason="a pipe closed by its reader is a POSIX notion")
def test_a_reader_that_goes_away_gives_status_141_not_a_verdict():
    # `gradcheck ... | head` under `set -o pipefail`: 1 would read as "your gradient failed".
    process = subprocess.Popen(
        [sys.executable, "-m", "gradcheck_cli", "sample", "--shape", "1000000", "--max-samples", "200000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with process:
        process.stdout.read(10)
        process.stdout.close()
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=60) == 141
    assert stderr == ""


@pytest.mark.skipif(os.name != "posix", reason="the set-up is make's")
def test_make_with_an_interpreter_that_does_not_exist_says_so_in_one_line(tmp_path):
    import shutil

    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "tools", tmp_path / "tools")
    environment = {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    missing = tmp_path / "no-such-python3"
    for goal in ("run", "test"):
        result = subprocess.run(
            ["make", "--no-print-directory", goal, f"PYTHON={missing}"],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode != 0 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and f"'{missing}' is not found" in result.stderr
        assert not (tmp_path / ".venv").exists()
    # Also where a .venv is already made: the Python asked for is not silently replaced by it.
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "pip").write_text("")
    command = ["make", "--no-print-directory", "-n", "run", f"PYTHON={missing}"]
    result = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and f"'{missing}' is not found" in result.stderr
