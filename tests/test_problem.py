"""load_problem: FILE.py:FUNCTION and package.module:FUNCTION, and every way they can go wrong."""

import json
import re
import sys

import numpy as np
import pytest

from gradcheck_cli import GradientProblem, check_problem
from gradcheck_cli.errors import (
    GradCheckError,
    InvalidProblemReference,
    NotAProblem,
    NotCallable,
    ProblemFileNotFound,
    ProblemFunctionNotFound,
    ProblemFunctionRaised,
    ProblemImportFailed,
    ProblemModuleNotFound,
)
from gradcheck_cli.problem import as_problem, load_problem

PROBLEM_SOURCE = """
import numpy as np
from gradcheck_cli import GradientProblem

def objective(parameters):
    return float(np.sum(parameters["w"] ** 2))

def problem():
    w = np.array([1.0, -2.0])
    return GradientProblem(objective, {"w": w}, {"w": 2 * w})

def as_tuple():
    w = np.array([3.0])
    return objective, {"w": w}, {"w": 2 * w}

def as_list():
    return list(as_tuple())

def raises():
    raise ValueError("no data\\nin this directory")

def exits():
    raise SystemExit(3)

def returns_int():
    return 3

def returns_pair():
    return objective, {}

def returns_uncallable_objective():
    return 1.0, {}, {}

def returns_array_parameters():
    return objective, np.ones(2), {}

NOT_A_FUNCTION = 7
"""


@pytest.fixture
def problem_file(tmp_path):
    path = tmp_path / "user_model.py"
    path.write_text(PROBLEM_SOURCE)
    return path


def test_a_file_function_returning_a_gradient_problem(problem_file):
    problem = load_problem(f"{problem_file}:problem")
    assert isinstance(problem, GradientProblem)
    assert check_problem(problem).passed


@pytest.mark.parametrize("function", ["as_tuple", "as_list"])
def test_a_file_function_returning_the_three_parts(problem_file, function):
    problem = load_problem(f"{problem_file}:{function}")
    assert isinstance(problem, GradientProblem) and list(problem.parameters) == ["w"]
    assert check_problem(problem).passed


def test_a_relative_file_path_and_a_sibling_import(tmp_path, monkeypatch):
    (tmp_path / "shared_layers.py").write_text("SCALE = 3.0\n")
    (tmp_path / "model.py").write_text(
        "import numpy as np\n"
        "from shared_layers import SCALE\n"
        "def problem():\n"
        "    w = np.array([1.0])\n"
        "    return (lambda p: float(SCALE * p['w'][0] ** 2)), {'w': w}, {'w': 2 * SCALE * w}\n"
    )
    monkeypatch.chdir(tmp_path.parent)
    path_before = list(sys.path)
    problem = load_problem(f"{tmp_path.name}/model.py:problem")
    assert check_problem(problem).passed
    assert sys.path == path_before  # the file's directory was on sys.path only while loading
    monkeypatch.delitem(sys.modules, "shared_layers")


def test_a_module_in_the_current_directory(tmp_path, monkeypatch):
    package = tmp_path / "userpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(PROBLEM_SOURCE)
    monkeypatch.chdir(tmp_path)
    path_before = list(sys.path)
    try:
        problem = load_problem("userpkg.model:as_tuple")
        assert check_problem(problem).passed
        assert sys.path == path_before
    finally:
        for name in ("userpkg.model", "userpkg"):
            sys.modules.pop(name, None)


def refused(reference, error_type):
    """The one-line message of the typed error, without the user's line it names (tested on its own)."""
    with pytest.raises(error_type) as caught:
        load_problem(reference)
    message = str(caught.value)
    assert "\n" not in message
    record = caught.value.to_dict()
    assert json.loads(json.dumps(record, allow_nan=False)) == record
    return re.sub(r" \(at [^()]+\.py:\d+ in [\w<>.]+\)$", "", message)


@pytest.mark.parametrize("reference", ["model.py", "model.py:", "model.py:not-a-name", ":problem", "pkg.mod:fn()"])
def test_malformed_references(reference):
    assert refused(reference, InvalidProblemReference) == (
        f"problem {reference!r} must be FILE.py:FUNCTION or package.module:FUNCTION"
    )


def test_a_missing_file(tmp_path):
    missing = tmp_path / "nowhere.py"
    assert refused(f"{missing}:problem", ProblemFileNotFound) == f"problem file {missing} does not exist"


def test_a_missing_module():
    assert refused("no_such_gradcheck_module.sub:problem", ProblemModuleNotFound) == (
        "problem module no_such_gradcheck_module.sub cannot be found"
    )


def test_a_module_whose_own_import_fails_is_not_a_missing_module(tmp_path, monkeypatch):
    (tmp_path / "needs_missing.py").write_text("import no_such_dependency_of_the_user\n")
    monkeypatch.chdir(tmp_path)
    assert refused("needs_missing:problem", ProblemImportFailed) == (
        "importing needs_missing raised ModuleNotFoundError: No module named 'no_such_dependency_of_the_user'"
    )


@pytest.mark.parametrize(
    "source, error",
    [
        ("raise RuntimeError('bad\\nconfig')", "RuntimeError: bad config"),
        ("def broken(:\n    pass", "SyntaxError: invalid syntax"),
        ("import sys\nsys.exit(2)", "SystemExit: 2"),
    ],
)
def test_a_file_that_fails_while_running(tmp_path, source, error):
    path = tmp_path / "broken.py"
    path.write_text(source + "\n")
    message = refused(f"{path}:problem", ProblemImportFailed)
    assert message.startswith(f"importing {path} raised {error}")


def test_a_missing_function(problem_file):
    assert refused(f"{problem_file}:nope", ProblemFunctionNotFound) == f"{problem_file} has no function nope"


def test_an_attribute_that_is_not_callable(problem_file):
    assert refused(f"{problem_file}:NOT_A_FUNCTION", NotCallable) == (
        f"{problem_file}:NOT_A_FUNCTION must be callable, got int"
    )


@pytest.mark.parametrize(
    "function, error",
    [("raises", "ValueError: no data in this directory"), ("exits", "SystemExit: 3")],
)
def test_a_function_that_raises(problem_file, function, error):
    assert refused(f"{problem_file}:{function}", ProblemFunctionRaised) == f"{problem_file}:{function}() raised {error}"


@pytest.mark.parametrize(
    "function, returned",
    [
        ("returns_int", "a value of type int"),
        ("returns_pair", "a tuple of length 2"),
        ("returns_uncallable_objective", "an objective of type float"),
        ("returns_array_parameters", "parameters of type ndarray"),
    ],
)
def test_a_function_that_returns_the_wrong_thing(problem_file, function, returned):
    reference = f"{problem_file}:{function}"
    assert refused(reference, NotAProblem) == (
        f"expected a GradientProblem or (objective, parameters, gradients) from {reference}(), got {returned}"
    )


def test_loader_errors_are_gradcheck_errors():
    for error_type in (
        InvalidProblemReference,
        ProblemFileNotFound,
        ProblemModuleNotFound,
        ProblemImportFailed,
        ProblemFunctionNotFound,
        ProblemFunctionRaised,
        NotAProblem,
    ):
        assert issubclass(error_type, GradCheckError)
        assert error_type.__doc__ and "\n" not in error_type.__doc__.strip()


def test_as_problem_passes_a_problem_through():
    problem = GradientProblem(np.sum, {"w": np.ones(1)}, {"w": np.ones(1)})
    assert as_problem(problem) is problem
    with pytest.raises(NotAProblem) as caught:
        as_problem(None)
    assert str(caught.value) == (
        "expected a GradientProblem or (objective, parameters, gradients) from the problem, "
        "got a value of type NoneType"
    )
