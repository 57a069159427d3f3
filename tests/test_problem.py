"""load_problem: FILE.py:FUNCTION and package.module:FUNCTION, and every way they can go wrong;
reject_shared_memory against a pairwise reference."""

import json
import re
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck_cli import GradientProblem, check_problem
from gradcheck_cli.engine import problem as problem_module
from gradcheck_cli.errors import (
    GradCheckError,
    InvalidArgument,
    InvalidProblemReference,
    NotAProblem,
    ProblemFileNotFound,
    ProblemFunctionNotFound,
    ProblemFunctionRaised,
    ProblemImportFailed,
    ProblemModuleNotFound,
    SharedMemory,
)
from gradcheck_cli.problem import as_problem, load_problem, reject_shared_memory

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


def test_a_loaded_problem_carries_the_reference_workers_load_it_by(problem_file, tmp_path, monkeypatch):
    adapt = problem_module.as_problem  # an adapter: load_problem calls it, and carries it for the workers
    monkeypatch.chdir(tmp_path)
    problem = load_problem(f"{problem_file.name}:as_tuple", adapt)
    assert problem.reference == problem_module.ProblemReference(f"{problem_file.name}:as_tuple", adapt, str(tmp_path))
    assert as_problem((problem.objective, {}, {})).reference is None  # a problem built in Python has none


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
    message = refused(f"{problem_file}:nope", ProblemFunctionNotFound)
    assert message.startswith(f"{problem_file} has no function nope; its functions are ")


def test_an_attribute_that_is_not_callable(problem_file):
    assert refused(f"{problem_file}:NOT_A_FUNCTION", InvalidArgument) == (
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


# --- reject_shared_memory: the byte-extent sweep against every pair ------------------------------


def pairwise_shared_memory(parameters, names):
    """The pair reject_shared_memory must report, or None: each name in turn against every array, exactly.

    The first name of ``names`` that shares memory with any other array of
    ``parameters`` (np.shares_memory, exact: these arrays are small), with
    its first such array in the mapping's order; the pair in the mapping's
    order. A value that is not an ndarray is compared when named, never as
    the other one.
    """
    order = list(parameters)
    arrays = [(name, value) for name, value in parameters.items() if isinstance(value, np.ndarray)]
    for name in names:
        for other, array in arrays:
            if other != name and np.shares_memory(parameters[name], array):
                return tuple(sorted((name, other), key=order.index))
    return None


def shared_memory_outcome(parameters, names):
    try:
        reject_shared_memory(parameters, names)
    except SharedMemory as error:
        return error.first, error.second
    return None


FLAT = 48  # elements of the flat buffer most views are cut from; also seen as a [6, 8] grid


@st.composite
def parameter_value(draw, flat, other, earlier):
    """One parameter value: a view of ``flat`` or ``other``, a separate array, an earlier value again,
    a zero-size array, or (rarely) something that is not an ndarray."""
    kind = draw(
        st.sampled_from(
            ["slice", "slice", "grid", "transposed", "interleaved", "separate", "again", "zero-size", "not an array"]
        )
    )
    if kind == "again" and earlier:
        value = draw(st.sampled_from(earlier))
        return value if draw(st.booleans()) else value[...]  # the same object, or a new view of all of it
    if kind == "grid":
        grid = flat.reshape(6, 8)
        rows = slice(draw(st.integers(0, 6)), draw(st.integers(0, 6)), draw(st.sampled_from([1, 2, 3, -1])))
        columns = slice(draw(st.integers(0, 8)), draw(st.integers(0, 8)), draw(st.sampled_from([1, 2, -2])))
        view = grid[rows, columns]
        return view.T if draw(st.booleans()) else view
    if kind == "transposed":
        rows, columns = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        start = draw(st.integers(0, FLAT - rows * columns))
        return flat[start : start + rows * columns].reshape(rows, columns).T
    if kind == "interleaved":
        # base[k::stride]: extents that intersect every other such view, whether or not they share an element.
        stride = draw(st.sampled_from([2, 3, 4]))
        return flat[draw(st.integers(0, stride - 1)) :: stride]
    if kind == "separate":
        return np.zeros(draw(st.integers(1, 4)))
    if kind == "zero-size":
        return draw(st.sampled_from([np.zeros((0, 3)), flat[5:5], flat.reshape(6, 8)[2:2, ::2], flat[::-1][:0]]))
    if kind == "not an array":
        start = draw(st.integers(0, FLAT - 1))
        choices = [1.5, [1.0, 2.0], memoryview(flat[start : start + 3])]  # a memoryview shares flat's memory
        return choices[draw(st.integers(0, len(choices) - 1))]
    buffer = draw(st.sampled_from([flat, flat, other]))
    start, stop = draw(st.integers(0, buffer.size)), draw(st.integers(0, buffer.size))
    return buffer[start : stop : draw(st.sampled_from([1, 1, 2, 3, -1, -2]))]


@st.composite
def shared_memory_cases(draw):
    """(parameters, names): up to 8 values in a random mapping order, a random selection in a random order."""
    flat, other = np.zeros(FLAT), np.zeros(24)
    values = []
    for _ in range(draw(st.integers(0, 8))):
        values.append(draw(parameter_value(flat, other, [value for value in values if isinstance(value, np.ndarray)])))
    names = [f"p{index}" for index in range(len(values))]
    order = draw(st.permutations(range(len(values))))
    parameters = {names[index]: values[index] for index in order}
    selection = draw(st.permutations(names))[: draw(st.integers(0, len(names)))]
    if draw(st.booleans()):
        selection = [name for name in parameters if name in selection]  # the problem's order, as check_gradients has it
    return parameters, selection


@given(shared_memory_cases())
def test_the_shared_memory_check_reports_what_the_pairwise_comparison_does(case):
    parameters, names = case
    assert shared_memory_outcome(parameters, names) == pairwise_shared_memory(parameters, names)


def test_the_reported_pair_is_the_first_name_s_first_overlap_in_the_problem_s_order():
    base = np.zeros(10)
    parameters = {"a": base[0:2], "b": base[4:6], "c": base[3:8], "d": base[5:9], "e": base[0:1]}
    assert shared_memory_outcome(parameters, ["d", "a"]) == ("b", "d")  # d's first overlap is b, before c
    assert shared_memory_outcome(parameters, ["a", "d"]) == ("a", "e")
    assert shared_memory_outcome(parameters, ["c"]) == ("b", "c")


def test_arrays_that_share_memory_are_no_error_when_neither_is_selected():
    base = np.zeros(6)
    parameters = {"u": base[:4], "w": np.zeros(3), "v": base[2:]}
    reject_shared_memory(parameters, ["w"])
    assert shared_memory_outcome(parameters, ["w", "v"]) == ("u", "v")


def test_a_thousand_disjoint_slices_of_one_buffer_pass_without_an_exact_test(monkeypatch):
    buffer = np.zeros(1024 * 16)
    parameters = {f"layer{index}.weight": buffer[16 * index : 16 * (index + 1)].reshape(4, 4) for index in range(1024)}
    exact_tests = []

    def counted_overlap(first, second):
        exact_tests.append(1)
        return np.shares_memory(first, second)

    monkeypatch.setattr(problem_module, "_overlap", counted_overlap)
    reject_shared_memory(parameters, list(parameters))
    assert exact_tests == []  # disjoint extents: not one candidate pair
    # The whole buffer beside them is a candidate with each slice, and shares memory with the first.
    parameters["buffer"] = buffer
    assert shared_memory_outcome(parameters, list(parameters)) == ("layer0.weight", "buffer")
    assert len(exact_tests) == 1


def test_interleaved_strided_views_all_candidates_and_none_shared():
    # The documented worst case: every pair's extents intersect, so every pair gets the exact test.
    base = np.zeros(64 * 8)
    parameters = {f"p{index}": base[index::64] for index in range(64)}
    reject_shared_memory(parameters, list(parameters))
    parameters["p64"] = base[63::64][1:]
    assert shared_memory_outcome(parameters, ["p64"]) == ("p63", "p64")
