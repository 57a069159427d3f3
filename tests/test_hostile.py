"""Hostile inputs and environments (issue 13): one test per numbered item of the issue.

Each test drives the mechanism with a few values of its kind, not only the
issue's example: the promises are that bad input is one line on stderr (or
one JSON error document with ``--json``) and exit status 2, gradcheck's own
defects 3, a failed gradient 1, a closed reader 141, an unwritable stdout 74,
every perturbed array restored bit-exactly, and stdout holding results only,
written whole once they are complete.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gradcheck_cli.chapter.scan import error_regimes
from gradcheck_cli.check import check_gradients
from gradcheck_cli.cli.app import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT_FAILED,
    main,
)
from gradcheck_cli.display import chapter_lines, output, render
from gradcheck_cli.errors import GradCheckError
from gradcheck_cli.problem import GradientProblem
from gradcheck_cli.taylor.remainder import check_taylor

ROOT = Path(__file__).resolve().parent.parent
PORTABLE = "fixtures/golden/inputs/portable.py:problem"


def invoke(*arguments, env=None):
    runner = CliRunner(env={"NO_COLOR": "1", "COLUMNS": None, "FORCE_COLOR": None, **(env or {})})
    return runner.invoke(main, list(arguments), prog_name="gradcheck", catch_exceptions=False)


def gradcheck(*arguments, env=None, **keywords):
    """``python -m gradcheck_cli ARGUMENTS`` in a fresh interpreter (descriptors and pipes are real)."""
    environment = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "gradcheck_cli", *arguments], cwd=ROOT, env=environment, timeout=120, **keywords
    )


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    assert stderr.startswith("Error: ") and stderr.endswith("\n") and stderr.count("\n") == 1, repr(stderr)
    return stderr[len("Error: ") : -1]


def strict_json(text: str):
    def reject(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=reject)


def assert_bad_input(arguments, *phrases):
    """Exit 2, one line naming the phrases, nothing on stdout; with --json one strict error document."""
    result = invoke(*arguments)
    assert result.exit_code == EXIT_BAD_INPUT, (result.exit_code, result.stderr)
    message = one_error_line(result.stderr)
    for phrase in phrases:
        assert phrase in message, message
    assert result.stdout == ""
    result = invoke(*arguments, "--json")
    assert result.exit_code == EXIT_BAD_INPUT
    assert one_error_line(result.stderr) == message
    assert list(strict_json(result.stdout)) == ["error"]


PROBLEMS = """
import ctypes, os
import numpy as np
from gradcheck_cli.problem import GradientProblem


def squares(parameters):
    return float(np.sum(parameters["w"] ** 2))


def problem_with(objective, names=("w",)):
    arrays = {name: np.array([1.0, -2.0, 0.5]) for name in names}
    return GradientProblem(objective, arrays, {name: 2 * array for name, array in arrays.items()})


class OwnBaseException(BaseException):
    pass


def raising(error):
    def objective(parameters):
        raise error
    return objective


def objective_generator_exit():
    return problem_with(raising(GeneratorExit("closed")))


def objective_own_base_exception():
    return problem_with(raising(OwnBaseException("own")))


def function_generator_exit():
    raise GeneratorExit


def function_own_base_exception():
    raise OwnBaseException("in the problem function")


class FloatRaises:
    def __float__(self):
        raise RuntimeError("no float")


class ShapeRaises:
    @property
    def shape(self):
        raise LookupError("no shape")


def returns_huge_int():
    return problem_with(lambda parameters: 10**400)


def returns_huge_negative_int():
    return problem_with(lambda parameters: -(7**1000))


def returns_float_raising():
    return problem_with(lambda parameters: FloatRaises())


def returns_shape_raising():
    return problem_with(lambda parameters: ShapeRaises())


def integer_name():
    w = np.array([1.0, 2.0])
    return GradientProblem(lambda parameters: float(np.sum(parameters[7] ** 2)), {7: w}, {7: 2 * w})


def tuple_name():
    w = np.array([1.0, 2.0])
    return GradientProblem(lambda parameters: 0.0, {("w",): w}, {("w",): w})


def surrogate_name():
    w = np.array([1.0, 2.0])
    return GradientProblem(lambda parameters: float(np.sum(w ** 2)), {"w\\udcff": w}, {"w\\udcff": 2 * w})


def makes_read_only():
    def objective(parameters):
        value = squares(parameters)
        parameters["w"].flags.writeable = False
        return value
    return problem_with(objective)


def chatty():
    libc = ctypes.CDLL(None)

    def objective(parameters):
        os.write(1, b"descriptor one\\n")
        os.system("echo from a shell")
        libc.printf(b"from C stdio\\n")
        return squares(parameters)
    return problem_with(objective)


def masked_parameter():
    w = np.ma.array([1.0, 2.0, 3.0], mask=[False, False, True])
    return GradientProblem(lambda parameters: float(np.sum(parameters["w"].data ** 2)), {"w": w}, {"w": 2 * w.data})


def masked_gradient():
    w = np.array([1.0, 2.0, 3.0])
    return GradientProblem(squares, {"w": w}, {"w": np.ma.array(2 * w, mask=[True, False, False])})


def huge_gradient():
    w = np.array([1.0, 2.0, 3.0])
    return GradientProblem(squares, {"w": w}, {"w": np.array([1.7e308, -1.7e308, 1.7e308])})
"""


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("hostile")
    (directory / "problems.py").write_text(PROBLEMS)
    (directory / "import_generator_exit.py").write_text("raise GeneratorExit\n")
    (directory / "import_own_base_exception.py").write_text(
        "class Own(BaseException):\n    pass\n\nraise Own('at import')\n"
    )
    return directory


# ------------------------------------------------------------------ item 1


@pytest.mark.parametrize("command", ["check", "taylor"])
@pytest.mark.parametrize(
    "reference, phrases",
    [
        ("problems.py:objective_generator_exit", ["objective", "GeneratorExit"]),
        ("problems.py:objective_own_base_exception", ["objective", "OwnBaseException: own"]),
        ("problems.py:function_generator_exit", ["raised GeneratorExit"]),
        ("problems.py:function_own_base_exception", ["raised OwnBaseException"]),
        ("import_generator_exit.py:problem", ["importing", "GeneratorExit"]),
        ("import_own_base_exception.py:problem", ["importing", "Own: at import"]),
    ],
)
def test_1_a_base_exception_from_the_users_code_is_bad_input_not_a_verdict(problems, command, reference, phrases):
    assert_bad_input([command, str(problems / reference)], *phrases)


# ------------------------------------------------------------------ item 2


@pytest.mark.parametrize("command", ["check", "taylor"])
@pytest.mark.parametrize(
    "function, phrases",
    [
        ("returns_huge_int", ["must return one real number", "int too large for a float"]),
        ("returns_huge_negative_int", ["must return one real number", "too large for a float"]),
        ("returns_float_raising", ["FloatRaises whose conversion to float raised RuntimeError"]),
        ("returns_shape_raising", ["ShapeRaises whose conversion to float raised LookupError"]),
        ("integer_name", ["parameter names must be strings, got 7 (int)"]),
        ("tuple_name", ["parameter names must be strings, got ('w',) (tuple)"]),
        ("surrogate_name", ["'w\\udcff'", "lone surrogate"]),
    ],
)
def test_2_faults_of_the_users_values_are_bad_input_not_internal_errors(problems, command, function, phrases):
    assert_bad_input([command, str(problems / f"problems.py:{function}")], *phrases)


# ------------------------------------------------------------------ item 3


class ZeroDimensionalViews(np.ndarray):
    """Indexing by a full index tuple returns a 0-d view into the array, not a copy of the element."""

    def __getitem__(self, index):
        element = np.ndarray.__getitem__(self, index)
        return np.ndarray.__getitem__(self, index)[...] if np.ndim(element) == 0 else element


def _objective_making_read_only(name):
    def objective(parameters):
        value = float(np.sum(np.asarray(parameters[name], dtype=np.float64) ** 2))
        parameters[name].flags.writeable = False
        return value

    return objective


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("run", ["check", "taylor"])
def test_3_every_array_is_restored_whatever_the_objective_does_to_it(problems, dtype, run):
    # An objective that makes its array read-only: restored, typed error (library), exit 2 (CLI).
    base = np.array([[0.25, -1.5, 3.0], [-0.0, 5e-324 if dtype == np.float64 else 1e-45, 7.0]], dtype=dtype)
    for w in (base.copy(), base.copy()[:, 1:]):  # an array and a view
        before = w.tobytes()
        problem = GradientProblem(_objective_making_read_only("w"), {"w": w}, {"w": 2 * w})
        with pytest.raises(GradCheckError, match="read-only"):
            if run == "check":
                check_gradients(problem.objective, problem.parameters, problem.gradients, samples="all")
            else:
                check_taylor(problem)
        assert w.tobytes() == before
    assert_bad_input([run, str(problems / "problems.py:makes_read_only")], "read-only", "restored")

    # A subclass whose indexing returns a 0-d view: the saved original is not a view of the probe.
    w = base.copy().view(ZeroDimensionalViews)
    before = np.asarray(w).tobytes()
    objective = lambda parameters: float(np.sum(np.asarray(parameters["w"], dtype=np.float64) ** 2))  # noqa: E731
    gradient = 2 * np.asarray(w, dtype=np.float64)
    if run == "check":
        report = check_gradients(objective, {"w": w}, {"w": gradient}, samples="all")
        assert report.checked == 6
    else:
        check_taylor(GradientProblem(objective, {"w": w}, {"w": gradient}))
    assert np.asarray(w).tobytes() == before


# ------------------------------------------------------------------ item 4


def _npy(path: Path, shape, dtype="<f8", data_bytes=None) -> str:
    """A .npy file whose header claims ``shape`` of ``dtype``, followed by ``data_bytes`` bytes."""
    import io

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": dtype, "fortran_order": False, "shape": tuple(shape)})
    path.write_bytes(header.getvalue() + bytes(8 if data_bytes is None else data_bytes))
    return str(path)


@pytest.mark.parametrize(
    "shape, dtype, data_bytes",
    [
        ((10**12,), "<f8", None),
        ((10**6, 10**6), "<f4", None),
        ((2, 3), "<f8", 40),  # one element short
        ((2, 3), "<i8", 56),  # one element too many
        ((2**62, 4), "<f8", None),
    ],
)
@pytest.mark.parametrize("option", ["--logits", "--analytic"])
def test_4_a_npy_header_that_claims_more_than_the_file_holds_is_bad_input(tmp_path, shape, dtype, data_bytes, option):
    path = _npy(tmp_path / "claims.npy", shape, dtype, data_bytes)
    count = math.prod(shape)
    assert_bad_input(["nll", option, path], f"--{option[2:]} file", "header claims", f"{count} elements")


# ------------------------------------------------------------------ item 5


def test_5_a_selection_that_cannot_fit_in_memory_is_refused_up_front(problems, monkeypatch):
    from gradcheck_cli.engine import sampling
    from gradcheck_cli.errors import TooManySamples

    # A fixed 8 GiB available, so that the text and JSON runs name the same limit whatever the machine does.
    monkeypatch.setattr(sampling, "available_memory", lambda: 8 << 30)
    for shape, samples, count in [("1000000000000", "1000000000000", 10**12), ("100000,100000", "10000000000", 10**10)]:
        assert_bad_input(["sample", "--shape", shape, "--max-samples", samples], f"selects {count} coordinates")
    (problems / "huge.py").write_text(
        "import numpy as np\n"
        "def problem():\n"
        "    w = np.zeros(10**7)\n"
        "    return (lambda p: float(p['w'][0]), {'w': w}, {'w': np.zeros(10**7)})\n"
    )
    # A check keeps its coordinates as columns (CHECKED_COORDINATE_BYTES each): 1 GiB holds 2 million.
    monkeypatch.setattr(sampling, "available_memory", lambda: 1 << 30)
    assert_bad_input(["check", f"{problems / 'huge.py'}:problem", "--samples", "all"], "selects 10000000 coordinates")
    monkeypatch.setattr(sampling, "available_memory", lambda: 8 << 30)
    with pytest.raises(TooManySamples, match="selects 100000000 coordinates"):
        sampling.sample_tensor_coordinates([10**4, 10**4], 10**8)
    # The limit is the memory available, whatever it is: with room for 5000 coordinates' records,
    # 5000 are sampled and 5001 refused.
    monkeypatch.setattr(sampling, "available_memory", lambda: 5000 * sampling.COORDINATE_BYTES)
    assert len(sampling.sample_tensor_coordinates([10**6], 5000)) == 5000
    with pytest.raises(TooManySamples, match="selects 5001 coordinates, more than the 5000"):
        sampling.sample_tensor_coordinates([10**6], 5001)
    monkeypatch.setattr(sampling, "available_memory", lambda: 5000 * sampling.CHECKED_COORDINATE_BYTES)
    w = np.zeros(6000)
    with pytest.raises(GradCheckError, match="selects 6000 coordinates"):
        check_gradients(lambda parameters: 0.0, {"w": w}, {"w": w}, samples="all")


# ------------------------------------------------------------------ item 6


def _closed_reader(arguments, read: int = 0):
    """Run gradcheck with a reader that reads ``read`` bytes of stdout and goes away."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gradcheck_cli", *arguments],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    with process:
        if read:
            process.stdout.read(read)
        process.stdout.close()
        stderr = process.stderr.read().decode()
        return process.wait(timeout=120), stderr


@pytest.mark.skipif(os.name != "posix", reason="pipes, /dev/full and closed descriptors are POSIX notions")
def test_6_output_streams_closed_full_missing_or_unable_to_encode():
    # A reader that goes away, before or in the middle of the results: 141, nothing on stderr.
    for arguments, read in [
        (["demo", "--format", "table"], 0),
        (["sample", "--shape", "1000000", "--max-samples", "6000", "--json"], 10),
    ]:
        assert _closed_reader(arguments, read) == (EXIT_BROKEN_PIPE, ""), arguments
    # Bad input with --json and a closed reader: still the one line, no traceback, 141.
    status, stderr = _closed_reader(["quadratic", "--nosuch", "--json"])
    assert status == EXIT_BROKEN_PIPE and one_error_line(stderr).startswith("No such option '--nosuch'")

    # An unwritable stdout: one line and 74, for results and for click's own help alike.
    if os.path.exists("/dev/full"):
        for arguments in (["scan", "--format", "table"], ["--help"]):
            with open("/dev/full", "w") as full:
                result = gradcheck(*arguments, stdout=full, stderr=subprocess.PIPE, text=True)
            assert result.returncode == EXIT_OUTPUT_FAILED, arguments
            assert one_error_line(result.stderr) == "cannot write the results to stdout: No space left on device"
    # The shell closes stdout (a preexec_fn would fork this process, which may hold JAX's threads).
    command = ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "gradcheck_cli", "quadratic", "--json"]
    result = subprocess.run(command, cwd=ROOT, stderr=subprocess.PIPE, text=True, timeout=120)
    assert result.returncode == EXIT_OUTPUT_FAILED
    assert one_error_line(result.stderr) == "cannot write the results to stdout: stdout is closed"

    # A terminal that cannot encode θ gets ASCII.
    for encoding, arguments in [
        ("latin-1", ["scan", "--format", "table"]),
        ("ascii", ["check", PORTABLE, "--format", "table"]),
        ("ascii", ["scan", "--help"]),
    ]:
        result = gradcheck(*arguments, env={"PYTHONIOENCODING": encoding}, capture_output=True)
        assert result.returncode == EXIT_OK and result.stderr == b"", (encoding, arguments, result.stderr)
        text = result.stdout.decode(encoding)
        assert "theta" in text and "θ" not in text


def test_6_ascii_spelling_keeps_every_other_character():
    assert (
        output.ascii_spelling("g(θ) = θ³ − 2θ: 2.10×10⁻¹¹ ✓ h₋ ─┤")
        == "g(theta) = theta^3 - 2theta: 2.10x10^-11 yes h- -|"
    )
    assert "θ".encode("ascii", errors=output.ASCII_ERRORS) == b"theta"


# ------------------------------------------------------------------ item 7


@pytest.mark.parametrize("command", ["check", "taylor"])
def test_7_what_the_users_code_writes_to_descriptor_1_goes_to_stderr(problems, command):
    result = gradcheck(command, str(problems / "problems.py:chatty"), "--json", capture_output=True, text=True)
    assert result.returncode == EXIT_OK, result.stderr
    assert list(strict_json(result.stdout)) == [command]
    for line in ("descriptor one", "from a shell", "from C stdio"):
        assert line in result.stderr and line not in result.stdout


# ------------------------------------------------------------------ item 8


def _interrupt_after(calls: int, function):
    count = [0]

    def interrupted(*arguments, **keywords):
        count[0] += 1
        if count[0] > calls:
            raise KeyboardInterrupt
        return function(*arguments, **keywords)

    return interrupted


@pytest.mark.parametrize(
    "arguments, target",
    [
        (["scan"], "check_lines"),
        (["demo"], "check_lines"),
        (["nll", "--samples", "6"], "check_lines"),
        (["check", PORTABLE, "--samples", "all", "--verbose"], "coordinate_check_lines"),
        (["scan", "--json"], "json"),
        (["check", PORTABLE, "--samples", "all", "--json"], "json"),
        (["demo", "--format", "table"], "tables"),
    ],
)
def test_8_ctrl_c_while_the_results_are_rendered_leaves_stdout_empty(monkeypatch, arguments, target):
    if target == "tables":
        from gradcheck_cli.display import tables

        monkeypatch.setattr(tables, "kink", _interrupt_after(0, tables.kink))  # after the first tables
    elif target == "json":  # the JSON encoder's one value
        monkeypatch.setattr(output._Encoder, "one", _interrupt_after(0, output._Encoder.one))
    else:  # the chapter's lines call check_lines there; render calls coordinate_check_lines
        module = chapter_lines if target == "check_lines" else render
        monkeypatch.setattr(module, target, _interrupt_after(2, getattr(module, target)))
    result = invoke(*arguments)
    assert result.exit_code == EXIT_INTERRUPTED
    assert result.stdout == ""
    assert result.stderr == "Error: interrupted\n"


@pytest.mark.skipif(os.name != "posix", reason="SIGINT and pipes are POSIX notions")
@pytest.mark.parametrize("output", [["--json"], []])
def test_8_ctrl_c_while_the_results_are_written_leaves_them_whole(output):
    # The reader is slow: gradcheck is blocked in the middle of a 1 MB write when Ctrl-C comes.
    import signal
    import time

    arguments = [sys.executable, "-m", "gradcheck_cli", "sample", "--shape", "1000000", "--max-samples", "6000"]
    process = subprocess.Popen([*arguments, *output], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with process:
        received = process.stdout.read(1)
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        received += process.stdout.read()
        stderr = process.stderr.read().decode()
        status = process.wait(timeout=120)
    expected = invoke(*arguments[3:], *output).stdout_bytes
    assert received == expected and len(expected) > 100_000
    assert status == EXIT_INTERRUPTED and stderr == "Error: interrupted\n"


# ------------------------------------------------------------------ item 9


@pytest.mark.parametrize(
    "options, phrase",
    [
        (["--step", "0"], "requested step 0.0 must be positive"),
        (["--step", "nan"], "requested step NaN must be positive"),
        (["--tolerance", "-1"], "tolerance -1.0 must be finite"),
        (["--samples", "0"], "needs at least one sample"),
        (["--samples", "-3"], "must be a positive whole number"),
        (["--analytic", "fixtures/golden/inputs/gradient-1x3.json"], "does not match analytic-gradient shape [1, 3]"),
    ],
)
@pytest.mark.parametrize("logits", [None, "fixtures/golden/inputs/logits-3x4.json"])
def test_9_nll_validates_the_request_before_computing_anything(monkeypatch, options, phrase, logits):
    from gradcheck_cli.chapter import nll
    from gradcheck_cli.cli.commands import nll as nll_command

    def must_not_run(*arguments, **keywords):
        raise AssertionError("computed before the request was validated")

    monkeypatch.setattr(nll, "indexed_mean_nll", must_not_run)
    monkeypatch.setattr(nll, "hand_derived_nll_gradient", must_not_run)
    if "--analytic" not in options:
        monkeypatch.setattr(nll_command, "load_array", must_not_run)
    arguments = ["nll", *options, *(["--logits", logits, "--targets", "3,1,2"] if logits else [])]
    assert_bad_input(arguments, phrase)


# ------------------------------------------------------------------ item 10


def _check(**options):
    w = np.array([1.0, -2.0, 0.5])
    return check_gradients(lambda parameters: float(np.sum(parameters["w"] ** 2)), {"w": w}, {"w": 2 * w}, **options)


def _taylor(**options):
    w = np.array([1.0, -2.0, 0.5])
    problem = GradientProblem(lambda parameters: float(np.sum(parameters["w"] ** 2)), {"w": w}, {"w": 2 * w})
    return check_taylor(problem, **options)


@pytest.mark.parametrize(
    "run, options, argument",
    [
        (_check, {"step": "fast"}, "step"),
        (_check, {"step": [1e-5]}, "step"),
        (_check, {"step": 10**400}, "step"),
        (_check, {"step": -(10**309)}, "step"),
        (_check, {"step": 1j}, "step"),
        (_check, {"step": np.complex128(1e-5)}, "step"),
        (_check, {"step": True}, "step"),
        (_check, {"step": b"1e-5"}, "step"),
        (_check, {"step": {"w": "auto"}}, "step"),
        (_check, {"step": {"w": None}}, "step"),
        (_check, {"tolerance": "x"}, "tolerance"),
        (_check, {"tolerance": [1e-6]}, "tolerance"),
        (_check, {"tolerance": 10**400}, "tolerance"),
        (_check, {"kink_tolerance": "x"}, "kink_tolerance"),
        (_check, {"kink_tolerance": {"w": 2j}}, "kink_tolerance"),
        (_check, {"names": 5}, "names"),
        (_check, {"names": [5]}, "names"),
        (_check, {"names": [["w"]]}, "names"),
        (_check, {"samples": 2.5}, "samples"),
        (_taylor, {"steps": ["a"]}, "steps"),
        (_taylor, {"steps": 5}, "steps"),
        (_taylor, {"steps": [1.0, 10**400]}, "steps"),
        (_taylor, {"seed": "x"}, "seed"),
        (_taylor, {"seed": 1.5}, "seed"),
        (_taylor, {"names": 5}, "names"),
        (_taylor, {"names": [None]}, "names"),
        (_taylor, {"direction": {"w": "ab"}}, "direction"),
        (_taylor, {"direction": {"w": [1j, 1, 1]}}, "direction"),
        (_taylor, {"direction": 5}, "direction"),
    ],
)
def test_10_a_bad_option_type_is_a_typed_error_naming_the_argument(run, options, argument):
    with pytest.raises(GradCheckError) as caught:
        run(**options)
    assert argument in str(caught.value)


# ------------------------------------------------------------------ item 11


@pytest.mark.parametrize(
    "command, function, status, phrase",
    [
        ("check", "masked_parameter", EXIT_BAD_INPUT, "parameters has a masked element at [2]"),
        ("taylor", "masked_parameter", EXIT_BAD_INPUT, "parameters has a masked element at [2]"),
        ("check", "masked_gradient", EXIT_BAD_INPUT, "analytic has a masked element at [0]"),
        ("taylor", "masked_gradient", EXIT_BAD_INPUT, "analytic has a masked element at [0]"),
        ("taylor", "huge_gradient", 1, None),
        ("check", "huge_gradient", 1, None),
    ],
)
def test_11_gradchecks_own_numpy_calls_print_no_warnings(problems, command, function, status, phrase):
    # pytest turns every warning into an error here, so a warning would surface as an internal error (3).
    result = invoke(command, str(problems / f"problems.py:{function}"))
    assert result.exit_code == status, result.stderr
    if phrase is None:
        assert result.stderr == ""
    else:
        assert phrase in one_error_line(result.stderr)
    w = np.array([1.0, 2.0, 3.0])
    for gradient in (np.array([1.7e308, -1.7e308, 1.7e308]), np.array([np.finfo(float).max] * 3)):
        check_taylor(GradientProblem(lambda parameters: float(np.sum(parameters["w"] ** 2)), {"w": w}, {"w": gradient}))
    if command == "taylor" and function == "huge_gradient":
        # And in a fresh interpreter, where numpy's warnings would reach stderr as they would for a user.
        result = gradcheck(command, str(problems / f"problems.py:{function}"), capture_output=True, text=True)
        assert result.returncode == status and result.stderr == ""


# ------------------------------------------------------------------ item 12


@pytest.mark.parametrize("point", ["100", "-16", "1e5", "3e9"])
def test_12_a_step_that_collapses_is_a_rejected_row_and_the_scan_goes_on(point):
    text = invoke("scan", "--point", point, "--advise")
    assert text.exit_code == EXIT_OK and text.stderr == ""
    document = strict_json(invoke("scan", "--point", point, "--advise", "--json").stdout)
    records = document["scan"]
    rejected = [record for record in records if record["regime"] == "rejected"]
    checked = [record for record in records if record["regime"] != "rejected"]
    assert rejected and checked and len(records) == 6
    for number, record in enumerate(records, start=1):
        assert (record["check"] is None) == (record["error"] is not None) == (record in rejected)
        if record in rejected:
            assert "PerturbationUnchanged" in record["error"]["kind"] or record["error"]["kind"] == "CollapsedStep"
            assert f"scan step {number} regime: rejected" in text.stdout
            assert f"scan step {number} rejected: " in text.stdout
            assert record["error"]["message"] in text.stdout
    # The others are labelled by the regime rule over the valid steps alone.
    assert [record["regime"] for record in checked] == error_regimes(
        [record["requested_step"] for record in checked],
        [record["check"]["comparison"]["scaled_error"] for record in checked],
        [record["check"]["comparison"]["pass"] for record in checked],
    )
    assert document["advice"]["advised_step"] > 0 and "advice: point=" in text.stdout
    table = invoke("scan", "--point", point, "--format", "table")
    assert table.exit_code == EXIT_OK and "rejected" in table.stdout

    # The default scan has no rejected row.
    assert "rejected" not in invoke("scan").stdout


@pytest.mark.parametrize("point, step", [("1e150", "0.1"), ("1e20", "1"), ("-3e16", "0.5"), ("1", "1e-17")])
def test_12_a_collapsed_quadratic_step_says_which_step_works(point, step):
    result = invoke("quadratic", "--point", point, "--step", step)
    assert result.exit_code == EXIT_BAD_INPUT
    message = one_error_line(result.stderr)
    smallest = message.rsplit("a step of at least ", 1)[1].split()[0]
    assert float(smallest) > float(step)
    assert invoke("quadratic", "--point", point, "--step", smallest).exit_code == EXIT_OK
    below = repr(math.nextafter(float(smallest), 0.0))
    assert invoke("quadratic", "--point", point, "--step", below).exit_code == EXIT_BAD_INPUT


# ------------------------------------------------------------------ item 13


def _make(directory: Path, *arguments, python):
    # Not a sub-make of the `make test` that may be running this suite: no inherited flags.
    environment = {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    command = ["make", "--no-print-directory", *arguments, f"PYTHON={python}"]
    return subprocess.run(command, cwd=directory, env=environment, capture_output=True, text=True, timeout=60)


def test_a_wheel_built_from_the_checkout_holds_every_module_and_schema(tmp_path):
    """`pip install .` (not editable) installs what the checkout has: every sub-package is packaged."""
    pytest.importorskip("setuptools", reason="building a wheel without network needs setuptools installed")
    try:  # setuptools builds wheels itself from 70.1; before, with the wheel package (a venv's own 66 has neither)
        import setuptools.command.bdist_wheel  # noqa: F401
    except ImportError:
        pytest.importorskip("wheel", reason="building a wheel without network needs setuptools ≥ 70.1 or wheel")
    import shutil
    import zipfile

    source = tmp_path / "source"
    shutil.copytree(ROOT / "gradcheck_cli", source / "gradcheck_cli", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    built = subprocess.run(
        [*command, "--wheel-dir", str(tmp_path / "wheel"), str(source)], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    packaged = {name for name in zipfile.ZipFile(wheel).namelist() if name.startswith("gradcheck_cli/")}
    shipped = {
        path.relative_to(source).as_posix()
        for path in (source / "gradcheck_cli").rglob("*")
        if path.suffix in (".py", ".json")
    }
    assert shipped - packaged == set()
    assert {"gradcheck_cli/engine/estimator.py", "gradcheck_cli/errors/record.py"} <= packaged


@pytest.mark.skipif(os.name != "posix", reason="the set-up is make's")
def test_13_make_sets_up_a_virtualenv_unless_the_interpreter_is_one(tmp_path):
    import shutil

    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import install_check
    finally:
        sys.path.remove(str(ROOT / "tools"))
    # The stamp's check notices a missing extra, and only for the extras asked for.
    requirements = [
        'pytest>=7; extra == "test"',
        "surely-not-installed-gradcheck-dep>=1; extra == 'plot'",
        "click>=8.1",
    ]
    assert install_check.missing_requirements({"test"}, requirements) == []
    assert install_check.missing_requirements({"test", "plot"}, requirements) == ["surely-not-installed-gradcheck-dep"]

    # The check passes for the checkout this interpreter has installed (this one, or another clone's) and
    # for no other folder: the suite may run in an interpreter that has some other checkout installed.
    def check(checkout):
        return subprocess.run([sys.executable, "tools/install_check.py", str(checkout), ""], cwd=ROOT).returncode

    where = "import os, gradcheck_cli as g; print(os.path.dirname(os.path.dirname(os.path.realpath(g.__file__))))"
    installed = subprocess.run([sys.executable, "-c", where], cwd=tmp_path, capture_output=True, text=True)
    if installed.returncode == 0:  # installed, not only importable from this suite's own path
        assert check(installed.stdout.strip()) == 0
    assert check(tmp_path) == 1

    # make's plan, in a copy (make drops a stale stamp as it reads the Makefile).
    for name in ("Makefile", "pyproject.toml", "tools"):
        (shutil.copytree if name == "tools" else shutil.copy)(ROOT / name, tmp_path / name)
    base = Path(sys.base_prefix) / "bin" / "python3"
    plan = _make(tmp_path, "-n", "test", python=base).stdout
    assert f"{base} -m venv --clear .venv" in plan and ".venv/bin/python -m pip install" in plan
    assert plan.rstrip().endswith(".venv/bin/python -m pytest -q")
    if sys.prefix != sys.base_prefix:  # this suite runs in a virtualenv: make uses it as it is
        plan = _make(tmp_path, "-n", "test", python=sys.executable).stdout
        assert "-m venv" not in plan and plan.rstrip().endswith(f"{sys.executable} -m pytest -q")

    # A Python that cannot make a virtualenv (Debian without python3-venv): one line saying what to install.
    fake = tmp_path / "no-ensurepip"
    (fake / "ensurepip").mkdir(parents=True)
    (fake / "ensurepip" / "__init__.py").write_text("raise ImportError('ensurepip is not available')\n")
    wrapper = tmp_path / "python-without-venv"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={fake} exec {base} "$@"\n')
    wrapper.chmod(0o755)
    for goal in ("run", "test"):
        result = _make(tmp_path, goal, python=wrapper)
        assert result.returncode != 0 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and "apt-get install python3-venv" in result.stderr
        assert not (tmp_path / ".venv").exists()


# ------------------------------------------------------------------ item 14


def test_14_the_docs_agree_with_the_code():
    docs = {path.name: path.read_text() for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]}
    for stale in ("phase", "../shared/spec", "pip install 'gradcheck-cli", "log-log axes; the chart"):
        assert not [name for name, text in docs.items() if stale in text], stale
    cli, schema = docs["cli.md"], docs["json.md"]
    assert (ROOT / "tests/data/rust-float-formats.tsv").exists() and "tests/data/rust-float-formats.tsv" in cli
    # The scan row: the keys docs/json.md names are the record's keys.
    document = strict_json(invoke("demo", "--json").stdout)
    rows = schema.split("**scan_record**", 1)[1].split("\n\n**", 1)[0]
    assert set(document["scan"][0]) == {"regime", "requested_step", "check", "error"}
    assert all(f"| `{key}` |" in rows for key in document["scan"][0])
    # No key of a JSON document has a space: the demo's rejected requests are snake_case.
    assert list(document["rejected"]) == [
        "zero_step",
        "step_leaves_point_unchanged",
        "non_finite_objective_value",
        "shape_mismatch",
    ]

    def keys(value):
        if isinstance(value, dict):
            for key, item in value.items():
                yield key
                yield from keys(item)
        elif isinstance(value, list):
            for item in value:
                yield from keys(item)

    for arguments in (["demo"], ["scan", "--point", "100", "--advise"], ["check", PORTABLE, "--step", "auto"]):
        assert not [key for key in keys(strict_json(invoke(*arguments, "--json").stdout)) if " " in key]
    # check --step auto: one key, "check", whose report holds the advice, as docs/json.md says.
    auto = strict_json(invoke("check", PORTABLE, "--step", "auto", "--json").stdout)
    assert list(auto) == ["check"] and auto["check"]["step_advice"] is not None
    assert "| `check` | report |" in schema and "| `step_advice` | problem_advice \\| null |" in schema
    assert "one column per requested step" in cli
