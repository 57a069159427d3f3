"""A user's gradient problem: an objective, named parameter arrays, and their gradients.

``gradcheck check`` and ``gradcheck taylor`` load one from ``FILE.py:FUNCTION``
or ``package.module:FUNCTION``: a function that takes no arguments and
returns a :class:`GradientProblem` or the tuple ``(objective, parameters,
gradients)``. The objective is called as ``objective(parameters)`` with the
same mapping of arrays, which the checkers perturb in place and restore.
"""

from __future__ import annotations

import contextlib
import heapq
import importlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable, Mapping
from collections.abc import Mapping as AnyMapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.blame import exception_line, user_location
from ..core.formatting import did_you_mean, short_repr
from ..errors import (
    AtCoordinate,
    AtParameter,
    GradCheckError,
    InvalidArgument,
    InvalidParameterName,
    InvalidProblemReference,
    MissingGradient,
    NoParameters,
    NonFiniteAnalyticGradient,
    NonFinitePoint,
    NotAProblem,
    ProblemFileNotFound,
    ProblemFunctionNotFound,
    ProblemFunctionRaised,
    ProblemImportFailed,
    ProblemModuleNotFound,
    ProblemNotAFile,
    SharedMemory,
    UnknownParameter,
)
from .blocks import FlatBlocks, block_bounds
from .loaded import remember
from .tensors import byte_bounds as _byte_bounds
from .tensors import parameter_and_gradient

__all__ = [
    "GradientProblem",
    "ProblemReference",
    "as_problem",
    "load_problem",
    "parameter_name",
    "selected_names",
    "reject_shared_memory",
    "sharing_memory",
    "validated_whole_gradients",
    "reject_non_finite",
]


@dataclass(frozen=True)
class ProblemReference:
    """How :func:`load_problem` loaded a problem, so that a worker process can load it again.

    ``text`` is ``FILE.py:FUNCTION`` or ``package.module:FUNCTION``, ``adapt``
    load_problem's hook, and ``directory`` the working directory it was loaded from
    (a worker loads ``load_problem(text, adapt)`` there).
    """

    text: str
    adapt: Callable | None
    directory: str


@dataclass(frozen=True)
class GradientProblem:
    """What to check: ``objective(parameters) -> float`` and ``gradients[name]`` per parameter.

    Parameters
    ----------
    objective : callable Mapping[str, np.ndarray] -> float
        Deterministic and side-effect-free; reads the arrays in ``parameters``.
    parameters : Mapping[str, np.ndarray]
        Writable arrays, perturbed in place one coordinate at a time.
    gradients : Mapping[str, np.ndarray]
        The analytic gradient of the objective for each parameter, same shapes.
    reference : ProblemReference, optional
        Set by :func:`load_problem`: how worker processes load the same problem
        (``check_problem(problem, jobs=N)``). None for a problem built in Python.
    """

    objective: Callable[[Mapping[str, np.ndarray]], float]
    parameters: Mapping[str, np.ndarray]
    gradients: Mapping[str, np.ndarray]
    reference: ProblemReference | None = None


def as_problem(returned, reference: str = "the problem") -> GradientProblem:
    """``returned`` as a :class:`GradientProblem`: itself, or built from ``(objective, parameters, gradients)``.

    Only the shape is checked here (a callable and two mappings);
    :func:`~gradcheck_cli.check.check_gradients` validates the arrays.
    """
    if isinstance(returned, GradientProblem):
        problem = returned
    elif isinstance(returned, (tuple, list)) and len(returned) == 3:
        problem = GradientProblem(*returned)
    else:
        raise NotAProblem(reference=reference, returned=_described(returned))
    if not callable(problem.objective):
        raise NotAProblem(reference=reference, returned=f"an objective of type {type(problem.objective).__name__}")
    for role in ("parameters", "gradients"):
        value = getattr(problem, role)
        if not isinstance(value, AnyMapping):
            raise NotAProblem(reference=reference, returned=f"{role} of type {type(value).__name__}")
    return problem


def selected_names(parameters: Mapping, gradients: Mapping, names=None) -> list:
    """The parameter names to check, in the problem's own order.

    ``names`` (one name or several) restricts the selection; every selected
    parameter needs an analytic gradient. UnknownParameter, NoParameters or
    MissingGradient otherwise.
    """
    for mapping in (parameters, gradients):
        for key in mapping:
            parameter_name(key)
    if names is None:
        selected = list(parameters)
    else:
        wanted = _wanted_names(names)
        for name in wanted:
            if name not in parameters:
                raise UnknownParameter(name=name, available=list(parameters))
        selected = [name for name in parameters if name in wanted]
    if not selected:
        raise NoParameters()
    for name in selected:
        if name not in gradients:
            raise MissingGradient(name=name)
    return selected


def parameter_name(key) -> str:
    """``key`` if it is a parameter name: a string that UTF-8 can encode; else InvalidParameterName."""
    if not isinstance(key, str):
        raise InvalidParameterName(name=short_repr(key), type_name=type(key).__name__)
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParameterName(name=ascii(key), type_name="a str with a lone surrogate, not UTF-8 text") from None
    return key


def _wanted_names(names) -> list:
    expected = "a parameter name or an iterable of parameter names"
    if isinstance(names, str):
        return [parameter_name(names)]
    try:
        wanted = list(names)
    except TypeError:
        raise InvalidArgument(argument="names", value=short_repr(names), expected=expected) from None
    for name in wanted:
        if not isinstance(name, str):
            raise InvalidArgument(
                argument="names", value=f"{short_repr(wanted)} holding {short_repr(name)}", expected=expected
            )
        parameter_name(name)
    return wanted


def reject_shared_memory(parameters: Mapping, names) -> None:
    """SharedMemory if a named parameter shares memory with any other parameter array.

    Perturbing one coordinate of ``names[i]`` must perturb nothing else the
    objective reads, so each named array is compared with every array in
    ``parameters``, unselected ones included (two unselected arrays may
    share memory). The pair is named in the problem's order. When several
    pairs share memory, the one reported is that of the first name in
    ``names`` that shares memory with anything, with its first such array in
    the problem's order.

    Only pairs whose byte extents ([low, high) from ``byte_bounds``)
    intersect can share memory, so the extents are sorted and swept, and
    only the intersecting pairs that hold a named array get the exact test
    (:func:`_overlap`): O(P log P) for P arrays plus one exact test per
    candidate pair. Separate arrays and disjoint slices of one buffer (each
    parameter its own contiguous stretch of a flat buffer) give no
    candidates at all. The worst case is views whose extents all intersect
    without sharing memory, such as strided views interleaved in one
    buffer (``base[0::k]``, ``base[1::k]``, ...): every named one is then a
    candidate with all of them, and the check falls back to the pairwise
    exact tests, O(P²).
    """
    names = list(names)
    arrays = [(name, value) for name, value in parameters.items() if isinstance(value, np.ndarray)]
    if not arrays:
        return
    order = {name: position for position, name in enumerate(parameters)}
    candidates = _extent_candidates(arrays, set(names))
    for name in names:
        value = parameters[name]
        # A named value that is not an ndarray has no extent here: compared with every array, as before.
        others = candidates.get(name, ()) if isinstance(value, np.ndarray) else arrays
        for other, array in others:
            if other != name and _overlap(value, array):
                first, second = sorted((name, other), key=order.__getitem__)
                raise SharedMemory(role="parameters", first=first, second=second)


def sharing_memory(arrays: Mapping, others: Mapping) -> set:
    """The keys of ``arrays`` whose array shares memory with an array of ``others`` (the same sweep of
    byte extents as :func:`reject_shared_memory`, then the exact test of each intersecting pair)."""
    tagged = [((0, key), value) for key, value in arrays.items()]
    tagged += [((1, key), value) for key, value in others.items() if isinstance(value, np.ndarray)]
    candidates = _extent_candidates(tagged, {tag for tag, _ in tagged if tag[0] == 0})
    return {
        tag[1]
        for tag, partners in candidates.items()
        if any(other[0] == 1 and _overlap(arrays[tag[1]], array) for other, array in partners)
    }


def _extent_candidates(arrays: list, selected: set) -> dict:
    """For each array of ``arrays`` named in ``selected``, the (name, array) pairs whose byte extents
    intersect its own, in the order of ``arrays``.

    The extents are the ones ``np.may_share_memory`` compares: half-open
    ``[low, high)``, and empty for a zero-size array, which so shares memory
    with nothing (as ``_overlap`` has it). Sorted by low, swept with the extents still open (a heap by
    high): each new extent intersects exactly the open ones. Open named and
    unnamed extents are kept apart, so two unnamed arrays are never paired.
    """
    extents = []
    for position, (_, array) in enumerate(arrays):
        if array.size == 0:
            continue
        low, high = _byte_bounds(array)
        if low < high:
            extents.append((low, high, position))
    extents.sort()
    named = {position for position, (name, _) in enumerate(arrays) if name in selected}
    partners = {}
    open_named, open_unnamed, closing = set(), set(), []
    for low, high, position in extents:
        while closing and closing[0][0] <= low:
            _, closed = heapq.heappop(closing)
            open_named.discard(closed)
            open_unnamed.discard(closed)
        for other in open_named:
            partners.setdefault(other, []).append(position)
        if position in named:
            if open_named or open_unnamed:
                partners.setdefault(position, []).extend((*open_named, *open_unnamed))
            open_named.add(position)
        else:
            open_unnamed.add(position)
        heapq.heappush(closing, (high, position))
    return {arrays[position][0]: [arrays[other] for other in sorted(others)] for position, others in partners.items()}


def validated_whole_gradients(problem: GradientProblem, names) -> dict:
    """Validate the named parameters for moving whole arrays at once; each one's gradient array by name.

    Every named parameter must be a writable float64, float32, float16 or bfloat16
    array of finite values, with a finite analytic gradient of the same shape
    (a real scalar stands for the gradient of a 0-d parameter), and share no
    memory with any other parameter: what the Taylor test and the step advice
    of a problem need before they move anything.
    """
    gradients = {}
    for name in names:
        try:
            _, gradient = parameter_and_gradient(problem.parameters[name], problem.gradients[name])
            reject_non_finite(problem.parameters[name], gradient)
        except GradCheckError as error:
            raise AtParameter(parameter=name, source=error) from error
        gradients[name] = gradient
    reject_shared_memory(problem.parameters, names)
    return gradients


def reject_non_finite(parameters: np.ndarray, gradient: np.ndarray) -> None:
    """Every θ and analytic value finite (what moving a whole array needs), else the first non-finite
    one as NonFinitePoint or NonFiniteAnalyticGradient wrapped in AtCoordinate (a block at a time)."""
    for values, error in ((parameters, NonFinitePoint), (gradient, NonFiniteAnalyticGradient)):
        blocks = FlatBlocks(values)
        for start, stop in block_bounds(values.size):
            block = blocks.read(start, stop)
            if block.dtype != np.float32:  # float32 is tested as it is; bfloat16 and the rest in float64
                block = block.astype(np.float64, copy=False)
            finite = np.isfinite(block)
            if not finite.all():
                first = int(np.argmin(finite))
                index = tuple(int(i) for i in np.unravel_index(start + first, values.shape))
                value = float(block[first])
                source = error(point=value) if error is NonFinitePoint else error(value=value)
                raise AtCoordinate(coordinate=list(index), source=source)


_TOO_HARD = getattr(getattr(np, "exceptions", np), "TooHardError", Exception)


def _overlap(first: np.ndarray, second: np.ndarray) -> bool:
    if not np.may_share_memory(first, second):
        return False
    try:
        return bool(np.shares_memory(first, second, max_work=100_000))
    except _TOO_HARD:
        # Too costly to decide exactly: refuse rather than perturb two parameters at once.
        return True


def load_problem(reference: str, adapt: Callable | None = None) -> GradientProblem:
    """Load a problem from ``FILE.py:FUNCTION`` or ``package.module:FUNCTION``.

    The function takes no arguments and returns a :class:`GradientProblem`
    or the tuple ``(objective, parameters, gradients)``; ``adapt(returned,
    reference)``, when given, may turn what it returned into one first (the
    command line's hook for torch code). The problem returned carries its
    :class:`ProblemReference`, by which ``check_problem(problem, jobs=N)``'s
    worker processes load it again. A file runs as a
    fresh module with its own directory first on ``sys.path`` (so it can
    import its neighbours, as ``python FILE.py`` would); a module is
    imported with the current directory on ``sys.path``. Both path entries
    are removed again once the function has returned.

    Raises
    ------
    GradCheckError
        InvalidProblemReference, ProblemFileNotFound, ProblemModuleNotFound,
        ProblemImportFailed, ProblemFunctionNotFound, InvalidArgument,
        ProblemFunctionRaised or NotAProblem, each with a one-line message.
    """
    source, function_name = _split_reference(reference)
    directory = os.getcwd()
    if _names_a_file(source):
        path = Path(source)
        if not path.is_file():
            _reject_missing_file(source, path)
        search_path = str(path.resolve().parent)
    else:
        search_path = directory
    with _first_on_sys_path(search_path):
        module = _load_file(source, path) if _names_a_file(source) else _import_module(source)
        function = getattr(module, function_name, None)
        if function is None:
            available = _functions_of(module)
            close = did_you_mean(function_name, available)
            raise ProblemFunctionNotFound(source=source, function=function_name, close=close, available=available)
        if not callable(function):
            raise InvalidArgument(argument=reference, value=type(function).__name__, expected="callable")
        try:
            returned = function()
            if inspect.iscoroutine(returned):  # closed, so that it is not also "never awaited"
                returned.close()
                raise NotAProblem(
                    reference=f"{reference}()", returned="a coroutine: make it a plain def, not async def"
                )
        except (KeyboardInterrupt, NotAProblem):
            raise
        except BaseException as error:  # SystemExit, GeneratorExit, the user's own BaseException subclasses
            raise ProblemFunctionRaised(
                reference=reference, error=exception_line(error) + user_location(error)
            ) from error
        if adapt is not None:
            returned = adapt(returned, f"{reference}()")
    problem = as_problem(returned, f"{reference}()")
    # A GradientProblem itself, not dataclasses.replace: a subclass's __init__ may take other arguments.
    reference = ProblemReference(reference, adapt, directory)
    return GradientProblem(problem.objective, problem.parameters, problem.gradients, reference)


_REFERENCE = re.compile(r"^(?P<source>.+):(?P<function>\w+)$")  # \w: a Unicode name (problème) too


def _split_reference(reference) -> tuple:
    match = _REFERENCE.match(reference) if isinstance(reference, str) else None
    if match is None or not match["function"].isidentifier():
        raise InvalidProblemReference(reference=str(reference))
    return match["source"], match["function"]


def _reject_missing_file(source: str, path: Path) -> None:
    """ProblemFileNotFound, or ProblemNotAFile for a directory, a FIFO or a device by that name."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        raise ProblemFileNotFound(path=source) from None
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
    kind = next((name for test, name in kinds if test(mode)), "a device")
    raise ProblemNotAFile(path=source, file_type=kind)


def _names_a_file(source: str) -> bool:
    return source.endswith(".py") or "/" in source or os.sep in source


@contextlib.contextmanager
def _first_on_sys_path(directory: str):
    added = directory not in sys.path
    if added:
        sys.path.insert(0, directory)
    try:
        yield
    finally:
        if added and directory in sys.path:
            sys.path.remove(directory)


def _load_file(source: str, path: Path):
    module_name = "_gradcheck_problem_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ProblemImportFailed(source=source, error="not a Python source file")
    module = importlib.util.module_from_spec(spec)
    # Registered before running, as an import would be: dataclasses and pickle look modules up by name;
    # and named to the processes its code starts, which find it by that name (engine/loaded.py).
    sys.modules[module_name] = module
    remember(module_name, str(path.resolve()))
    try:
        spec.loader.exec_module(module)
    except KeyboardInterrupt:
        sys.modules.pop(module_name, None)
        raise
    except BaseException as error:
        sys.modules.pop(module_name, None)
        raise ProblemImportFailed(source=source, error=exception_line(error) + user_location(error)) from error
    return module


def _functions_of(module) -> list:
    """The public functions ``module`` defines itself (not those it imports), in its order."""
    return [
        name
        for name, value in vars(module).items()
        if inspect.isfunction(value) and value.__module__ == module.__name__ and not name.startswith("_")
    ]


def _import_module(source: str):
    try:
        return importlib.import_module(source)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if source == missing or source.startswith(missing + "."):
            raise ProblemModuleNotFound(module=source) from error
        raise ProblemImportFailed(source=source, error=exception_line(error) + user_location(error)) from error
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        raise ProblemImportFailed(source=source, error=exception_line(error) + user_location(error)) from error


def _described(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of length {len(value)}"
    return f"a value of type {type(value).__name__}"
