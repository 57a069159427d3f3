"""Typed errors: every class has the chapter's message, fields, and a JSON-ready to_dict()."""

import functools
import json
import math
import pickle

import pytest

import gradcheck_cli
from gradcheck_cli import errors
from gradcheck_cli.core.installs import COMMANDS
from gradcheck_cli.errors import GradCheckError
from gradcheck_cli.errors import command_line as cli_errors

# One instance of every error class, with the message the chapter's Display would print.
EXAMPLES = [
    (
        errors.UnknownOption(
            entry="check_function", option="'mode'", close=" (did you mean 'modes'?)", known=["order", "modes"]
        ),
        "check_function has no option 'mode' (did you mean 'modes'?); its options are order, modes",
    ),
    (errors.InvalidStep(step=0.0), "central-difference requested step 0.0 must be positive and finite"),
    (errors.NonFinitePoint(point=math.nan), "gradient-check point NaN must be finite"),
    (
        errors.PerturbationNotFinite(side="plus", point=1.7e308, step=1e308),
        "plus perturbation from point 1.7e308 by step 1e308 is not finite",
    ),
    (
        errors.PerturbationUnchanged(side="minus", point=1.0, step=1e-20),
        "minus perturbation from point 1.0 by step 1e-20 rounds back to the point",
    ),
    (
        errors.InvalidActualSpacing(side="minus", point=1.0, probe=1.0, spacing=0.0),
        "minus actual spacing from point 1.0 to probe 1.0 must be positive and finite, got 0.0",
    ),
    (errors.NonFiniteStencilWeight(side="plus", value=math.inf), "plus stencil weight is not finite: inf"),
    (errors.NonFiniteEvaluation(side="center", value=-math.inf), "center function evaluation returned -inf"),
    (
        errors.NonScalarEvaluation(side="plus", returned="ndarray of shape (3,)"),
        "plus function evaluation must return one real number, got ndarray of shape (3,)",
    ),
    (errors.NonFiniteOneSidedSlope(side="minus", value=math.nan), "minus one-sided slope is not finite: NaN"),
    (errors.NonFiniteNumericalGradient(value=math.inf), "central difference produced non-finite gradient inf"),
    (errors.InvalidTolerance(tolerance=-1e-6), "gradient-check tolerance -1e-6 must be finite and nonnegative"),
    (errors.NonFiniteAnalyticGradient(value=math.nan), "analytic gradient NaN must be finite"),
    (
        errors.GradientShapeMismatch(parameters=[2], analytic=[1, 2]),
        "parameter shape [2] does not match analytic-gradient shape [1, 2]",
    ),
    (errors.InvalidShape(shape=[2, -1]), "tensor shape [2, -1] must contain only nonnegative whole numbers"),
    (errors.ShapeOverflow(), "sampled tensor shape overflows a signed 64-bit element count"),
    (errors.EmptyTensor(), "sampled tensor gradient check needs at least one value"),
    (errors.ZeroSamples(), "sampled tensor gradient check needs at least one sample"),
    (
        errors.InvalidArgument(argument="parameters", value="list", expected="a numpy array"),
        "parameters must be a numpy array, got list",
    ),
    (
        errors.UnsupportedDtype(role="parameters", dtype="int64", expected="float64"),
        "parameters array has dtype int64; expected float64",
    ),
    (
        errors.ReadOnlyArray(role="parameters", during_check=False),
        "parameters array is read-only; the check perturbs it in place and restores it",
    ),
    (errors.InvalidLogits(problem="must be float64, got float32"), "logits must be float64, got float32"),
    (
        errors.InvalidTargets(problem="row 1 target 3 is not a class in 0..2"),
        "targets row 1 target 3 is not a class in 0..2",
    ),
    (
        errors.InvalidStepSequence(steps=[1e-3]),
        "requested steps [0.001] must be at least two positive finite steps in strictly decreasing order",
    ),
    (
        errors.TooFewAcceptedSteps(accepted=1, requested=3),
        "step advice needs at least two accepted steps with distinct actual spacings, got 1 of 3 requested steps",
    ),
    (
        errors.UnrepresentablePoint(point=0.1, dtype="float32", nearest=0.10000000149011612),
        "gradient-check point 0.1 is not representable in float32 (nearest 0.10000000149011612)",
    ),
    (
        errors.UnknownParameter(name="v", available=["x", "w"]),
        "parameter 'v' is not one of the problem's parameters ['x', 'w']",
    ),
    (
        errors.ParameterChanged(parameter="x", change="modified in place"),
        "parameter 'x' was modified in place by the objective during the check; every array was restored, "
        "and the objective must leave its parameters as they are",
    ),
    (
        errors.UnknownSampler(sampler="'random'", available=["structured", "chapter"]),
        "sampler 'random' is not one of structured, chapter",
    ),
    (errors.MissingGradient(name="w"), "the problem has no analytic gradient for parameter 'w'"),
    (errors.NoParameters(), "the problem has no parameters to perturb"),
    (errors.ZeroDirection(norm=0.0), "Taylor-test direction norm 0.0 must be positive and finite"),
    (
        errors.PlottingUnavailable(),
        "plotting needs matplotlib, which is not installed: pip install matplotlib (make install installs it, the plot extra)",
    ),
    (errors.UnsupportedPlotFormat(path="scan.pdf"), "plot file 'scan.pdf' must end in .png or .svg"),
    (
        errors.InvalidArgument(argument="objective", value="int", expected="callable"),
        "objective must be callable, got int",
    ),
    (
        errors.InvalidArgument(
            argument="parameters", value="list", expected="a mapping from parameter names to arrays"
        ),
        "parameters must be a mapping from parameter names to arrays, got list",
    ),
    (errors.InvalidParameterName(name="3", type_name="int"), "parameter names must be strings, got 3 (int)"),
    (errors.UnexpectedGradient(name="W"), "analytic gradient 'W' names no parameter of the problem"),
    (
        errors.InvalidArgument(
            argument="samples per parameter", value="-2", expected='a positive whole number or "all"'
        ),
        'samples per parameter must be a positive whole number or "all", got -2',
    ),
    (
        errors.InvalidCoordinate(coordinate="[0, 3]", shape=[2, 3]),
        "coordinate [0, 3] is not an index into shape [2, 3]",
    ),
    (errors.DuplicateCoordinate(coordinate=[1, 1]), "coordinate [1, 1] is listed twice"),
    (
        errors.SharedMemory(role="parameters", first="w", second="v"),
        "parameters 'w' and 'v' share memory; perturbing one would perturb both: pass a copy (np.array(...)) of one",
    ),
    (
        errors.AtParameter(parameter="w", source=errors.ZeroSamples()),
        "parameter 'w': sampled tensor gradient check needs at least one sample",
    ),
    (
        errors.InvalidProblemReference(reference="model.py"),
        "problem 'model.py' must be FILE.py:FUNCTION or package.module:FUNCTION",
    ),
    (errors.ProblemFileNotFound(path="model.py"), "problem file model.py does not exist"),
    (errors.ProblemModuleNotFound(module="pkg.model"), "problem module pkg.model cannot be found"),
    (
        errors.ProblemImportFailed(source="model.py", error="SyntaxError: invalid syntax"),
        "importing model.py raised SyntaxError: invalid syntax",
    ),
    (
        errors.ProblemFunctionNotFound(
            source="model.py", function="problme", close=" (did you mean 'problem'?)", available=["loss", "problem"]
        ),
        "model.py has no function problme (did you mean 'problem'?); its functions are loss, problem",
    ),
    (
        errors.ProblemFunctionRaised(reference="model.py:problem", error="ValueError: no data"),
        "model.py:problem() raised ValueError: no data",
    ),
    (
        errors.NotAProblem(reference="model.py:problem()", returned="a value of type int"),
        "expected a GradientProblem or (objective, parameters, gradients) from model.py:problem(), got a value of type int",
    ),
    (
        cli_errors.CommandLineError(
            option="--steps", problem="--steps: '1,x' is not a comma-separated list of numbers"
        ),
        "--steps: '1,x' is not a comma-separated list of numbers",
    ),
    (
        cli_errors.InputFileError(option="--logits", path="missing.npy", problem="does not exist"),
        "--logits file 'missing.npy' does not exist",
    ),
    (
        cli_errors.ObjectiveRaised(reference="model.py:problem", error="ZeroDivisionError: division by zero"),
        "the objective of model.py:problem raised ZeroDivisionError: division by zero",
    ),
    (
        cli_errors.ObjectiveReturned(
            reference="model.py:problem", source=errors.NonFiniteEvaluation(side="center", value=math.nan)
        ),
        "the objective of model.py:problem: center function evaluation returned NaN",
    ),
    (
        cli_errors.UserCodeRaised(reference="model.py:problem", error="RuntimeError: backward failed"),
        "the code of model.py:problem raised RuntimeError: backward failed",
    ),
    (
        cli_errors.OutOfMemory(
            reference="model.py:problem", parameter="w", elements=10, dtype="float32", size="0.0 MiB"
        ),
        "not enough memory for gradcheck's working arrays of model.py:problem: its largest parameter 'w' holds 10 "
        "float32 elements (0.0 MiB), and a check needs a few copies of it; check fewer coordinates (--samples), or "
        "on a machine with more memory",
    ),
    (
        cli_errors.ExecutorUnavailable(address="dask://127.0.0.1:8786", problem="dask.distributed is not installed"),
        "--executor dask://127.0.0.1:8786 cannot be used: dask.distributed is not installed",
    ),
    (
        errors.TorchUnavailable(),
        "gradcheck_cli.torch needs torch, which is not installed: pip install torch==2.13.0 --index-url "
        "https://download.pytorch.org/whl/cpu (its CPU build; docs/torch.md)",
    ),
    (
        errors.UnsupportedDevice(tensor="inputs[0]", device="cuda:0"),
        "tensor 'inputs[0]' is on device cuda:0; gradcheck probes CPU tensors only, in place "
        "(see docs/torch.md): check a .cpu() copy of the code",
    ),
    (
        errors.UnsupportedTensor(tensor="x", problem="has dtype torch.int64; the nearest is float64"),
        "tensor 'x' has dtype torch.int64; the nearest is float64",
    ),
    (
        errors.SharedMemory(role="tensors", first="inputs[0]", second="inputs[2]"),
        "tensors 'inputs[0]' and 'inputs[2]' share memory; perturbing one would perturb both: pass a .clone() of one",
    ),
    (
        errors.InvalidCall(call="fn(*inputs)", problem="must return a tensor or a tuple of tensors, got dict"),
        "fn(*inputs) must return a tensor or a tuple of tensors, got dict",
    ),
    (
        errors.JaxUnavailable(),
        "gradcheck_cli.jax needs jax, which is not installed: pip install jax==0.6.2 (the CPU build, jaxlib "
        "with it; docs/jax.md)",
    ),
    (
        errors.X64Disabled(input="params['w']", dtype="float64"),
        "input \"params['w']\" is float64, but JAX computes it in float32 with x64 off (its default): "
        "run jax.config.update('jax_enable_x64', True) first, or pass float32 inputs",
    ),
    (
        errors.X64Disabled(input="z", dtype="complex128"),
        "input 'z' is complex128, but JAX computes it in complex64 with x64 off (its default): "
        "run jax.config.update('jax_enable_x64', True) first, or pass complex64 inputs",
    ),
    (
        errors.UnsupportedJaxInput(input="x", problem="has dtype float8_e4m3fn; the nearest is float16"),
        "input 'x' has dtype float8_e4m3fn; the nearest is float16",
    ),
    (
        errors.InvalidCall(call="fn(*args)", problem="returned no floating-point output"),
        "fn(*args) returned no floating-point output",
    ),
    (
        errors.AtCoordinate(coordinate=[0, 1], source=errors.NonFiniteEvaluation(side="minus", value=math.nan)),
        "gradient check at coordinate [0, 1] failed: minus function evaluation returned NaN",
    ),
    (
        errors.InvalidArgument(argument="step", value="'fast'", expected="a positive finite number"),
        "step must be a positive finite number, got 'fast'",
    ),
    (
        errors.TooManySamples(role="requested samples", count=10**12, limit=5_000_000),
        "requested samples selects 1000000000000 coordinates, more than the 5000000 whose records fit in "
        "the memory available; request fewer",
    ),
    (
        errors.ReadOnlyArray(role="parameters", during_check=True),
        "parameters array was made read-only by the objective during the check; its values were restored "
        "and it was left read-only",
    ),
    (
        errors.MaskedValues(role="analytic", coordinate=[1]),
        "analytic has a masked element at [1]; the check needs every value",
    ),
    (
        errors.UnpicklableProblem(jobs=2, error="AttributeError: Can't pickle local object 'build.<locals>.objective'"),
        "jobs=2 sends the objective and its parameters to worker processes by pickle, which failed: "
        "AttributeError: Can't pickle local object 'build.<locals>.objective'; make the objective a module-level "
        "function (or a picklable object), or check a problem loaded by reference "
        "(check_problem(load_problem('FILE.py:FUNCTION')))",
    ),
    (
        errors.WorkerProblemDiffers(difference="parameter 'W1' is not bit-identical"),
        "the problem loaded in a worker process differs from this process's: parameter 'W1' is not bit-identical "
        "(does the problem function draw unseeded random numbers?); seed it, or check with jobs=1",
    ),
    (
        errors.WorkerDied(jobs=4, problem="was killed by signal SIGSEGV"),
        "a worker process of the check with jobs=4 was killed by signal SIGSEGV; every array is restored: "
        "check with jobs=1 to see the failure in this process",
    ),
    (
        errors.ProblemNotAFile(path="models", file_type="a directory"),
        "problem file models is a directory, not a Python source file",
    ),
    (
        errors.WorkerProbeDiffers(parameter="w", coordinate=[3], side="minus", worker=2.0, here=1.0),
        "parameter 'w' at coordinate [3]: f at θ−h is 2.0 in a worker process and 1.0 in this one, so the workers' "
        "objective differs from this process's (a module edited since, a file or an environment variable read "
        "differently, a value that depends on the calls made before); check with jobs=1",
    ),
    (
        errors.ObjectiveInMain(jobs=2, name="objective"),
        "jobs=2 runs the objective objective in worker processes, which import it by its module, but it is defined "
        "in a __main__ they cannot import (that of python -c, standard input or a notebook; any script's for an "
        "executor's workers); define it in a module file and import it from there, or check with jobs=1",
    ),
    (
        errors.SelfOverlappingArray(role="parameters", strides=[0, 8]),
        "parameters array has elements that share memory (strides [0, 8], an as_strided or broadcast view): "
        "perturbing one would perturb others; pass a copy (np.array(...))",
    ),
    (
        errors.CollapsedStep(side="minus", point=1e150, step=0.1, smallest_step=9.085484053695086e133),
        "minus perturbation from point 1e150 by step 0.1 rounds back to the point; "
        "a step of at least 9.085484053695086e133 moves both probes",
    ),
]


@pytest.mark.parametrize("error, message", EXAMPLES, ids=[type(e).__name__ for e, _ in EXAMPLES])
def test_message_fields_and_dict(error, message):
    assert str(error) == message
    assert isinstance(error, GradCheckError) and isinstance(error, ValueError)
    record = error.to_dict()
    assert record["kind"] == type(error).__name__
    assert record["message"] == message
    assert list(record) == ["kind", *type(error).fields, "message"]
    # Strictly JSON: non-finite floats are strings, so allow_nan=False never raises.
    assert json.loads(json.dumps(record, allow_nan=False)) == record


def test_every_error_class_is_exercised_and_exported():
    classes = {
        cls
        for module in (errors, cli_errors)
        for cls in (getattr(module, name) for name in dir(module))  # dir: errors loads its classes lazily
        if isinstance(cls, type) and issubclass(cls, GradCheckError)
    } - {GradCheckError}
    assert classes == {type(error) for error, _ in EXAMPLES}
    for cls in classes:
        assert getattr(gradcheck_cli, cls.__name__) is cls
        assert cls.__doc__ and "\n" not in cls.__doc__.strip()


def test_non_finite_fields_become_strings():
    assert errors.NonFiniteEvaluation(side="minus", value=math.nan).to_dict()["value"] == "NaN"
    assert errors.InvalidStep(step=-math.inf).to_dict()["step"] == "-inf"


def test_coordinate_error_nests_its_source():
    source = errors.InvalidStep(step=0.0)
    wrapped = errors.AtCoordinate(coordinate=[3], source=source)
    assert wrapped.__cause__ is source
    assert wrapped.to_dict()["source"] == source.to_dict()


@pytest.mark.parametrize("error, _message", EXAMPLES, ids=[type(e).__name__ for e, _ in EXAMPLES])
def test_errors_pickle_and_compare(error, _message):
    # Multiprocessing and pytest-xdist send exceptions between processes.
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and copy.to_dict() == error.to_dict() and str(copy) == str(error)
    # Identity-equal and hashable, as every exception is: two equal records are two errors.
    assert copy != error and copy == copy and len({error, copy}) == 2


def test_a_template_names_only_its_fields():
    with pytest.raises(TypeError, match="template names 'stride'"):

        class Misspelled(GradCheckError):
            fields = ("step",)
            template = "step {stride:?} must be positive"


def test_an_error_class_is_a_record_of_fields_and_a_template():
    # One mechanism: no class writes its own __init__, message method or to_dict.
    for cls in {type(error) for error, _ in EXAMPLES}:
        own = set(vars(cls))
        assert not own & {"__init__", "describe", "__str__", "to_dict", "__eq__", "__hash__"}, cls.__name__
        assert cls.template, cls.__name__


def test_wrong_fields_are_a_programming_error():
    with pytest.raises(TypeError):
        errors.InvalidStep(stride=1.0)


def test_library_messages_name_parameters_and_the_command_line_adds_its_flags():
    from gradcheck_cli.cli.app import in_flags
    from gradcheck_cli.errors import command_line

    library = [
        (error, message)
        for error, message in EXAMPLES
        if type(error).__module__.startswith("gradcheck_cli.errors") and type(error).__module__ != command_line.__name__
    ]
    # An install command's own options (pip's --index-url) are not gradcheck's flags.
    bare = [functools.reduce(lambda text, line: text.replace(line, ""), COMMANDS.values(), m) for _, m in library]
    assert library and not [message for message in bare if " --" in message or "(--" in message]
    died = errors.WorkerDied(jobs=4, problem="was killed by signal SIGSEGV")
    assert str(died).endswith("check with jobs=1 to see the failure in this process")
    assert in_flags(died).endswith("check with jobs=1 (--jobs 1) to see the failure in this process")


#: The modules that know the command line: they may spell its flags.
COMMAND_LINE_MODULES = {"app.py", "command_line.py", "render.py", "tables.py", "plotting.py"}


def test_library_verdict_reasons_name_parameters_and_the_text_adds_the_flags():
    from pathlib import Path

    from gradcheck_cli.errors import command_line as cli_errors

    package = Path(cli_errors.__file__).parent.parent
    library = [
        path
        for path in package.rglob("*.py")
        if path.name not in COMMAND_LINE_MODULES and "commands" not in path.relative_to(package).parts
    ]
    assert len(library) > 20
    assert not [path.name for path in library if "(--" in path.read_text(encoding="utf-8")]
    assert cli_errors.in_flags("try another step (parameter step)") == "try another step (--step)"
    assert cli_errors.in_flags("check every coordinate (samples='all')") == "check every coordinate (--samples all)"


def test_errors_load_on_first_use_and_export_what_they_always_did():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "def loaded(): return sorted(name.split('.')[-1] for name in sys.modules if name.startswith('gradcheck_cli.errors.'))\n"
        "import gradcheck_cli\n"
        "print(loaded())\n"
        "from gradcheck_cli.errors import InvalidStep\n"
        "print(loaded(), gradcheck_cli.InvalidStep is InvalidStep)\n"
        "from gradcheck_cli import display\n"  # a submodule: not looked for among the errors
        "print(loaded())\n"
        "module = gradcheck_cli.ProblemFileNotFound.__module__\n"
        "print(loaded(), module)\n"
    )
    lines = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert lines.splitlines() == [
        "['record']",
        "['record', 'requests'] True",
        "['record', 'requests']",
        "['record', 'requests', 'user_code'] gradcheck_cli.errors.user_code",
    ]
    from gradcheck_cli.errors import command_line, record, requests, user_code

    assert errors.__all__ == ["GradCheckError", *requests.__all__, *user_code.__all__, *command_line.__all__]
    assert errors.GradCheckError is record.GradCheckError
    lazy = [name for name in gradcheck_cli.__all__ if name != "__version__"][: -len(errors.__all__)]
    assert gradcheck_cli.__all__ == ["__version__", *lazy, *errors.__all__]
    for name in gradcheck_cli.__all__:
        assert getattr(gradcheck_cli, name) is not None and name in dir(gradcheck_cli)
    for name in errors.__all__:
        assert getattr(gradcheck_cli, name) is getattr(errors, name) and name in dir(errors)
    for module, name in ((gradcheck_cli, "NoSuchError"), (errors, "NoSuchError"), (errors, "__wrapped__")):
        with pytest.raises(AttributeError):
            getattr(module, name)
    namespace = {}
    exec("from gradcheck_cli.errors import *", namespace)
    assert {name for name in namespace if name != "__builtins__"} == set(errors.__all__)
