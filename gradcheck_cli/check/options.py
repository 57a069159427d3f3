"""The options of a check: one record for every entry point (numpy, torch, JAX, the pytest helpers)
and the command line, validated once.

:func:`options_of` turns an entry point's keyword arguments into :class:`Options`, refusing an
unknown name (with the close ones) and a value of the wrong kind before anything is called; the
command line has the options validated here before it loads the user's problem, whose code then
never runs for a bad value.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..core.defaults import CHECK_SAMPLES, SEED
from ..core.formatting import did_you_mean
from ..engine.estimator import validate_step, validate_tolerance
from ..errors import InvalidArgument, UnknownOption

__all__ = [
    "ALL_COORDINATES",
    "AUTO_STEP",
    "MODES",
    "ORDERS",
    "Options",
    "Samples",
    "is_auto",
    "is_serial",
    "options_of",
]

#: ``samples=ALL_COORDINATES`` checks every coordinate, in row-major order.
ALL_COORDINATES = "all"
#: ``step=AUTO_STEP`` checks each parameter at the step advised for one representative coordinate.
AUTO_STEP = "auto"
#: The modes a torch or JAX check differentiates in (JAX's words): reverse (vjp) and forward (jvp).
MODES = ("fwd", "rev")
#: The orders a torch or JAX check differentiates to: each checks every order below it too.
ORDERS = (1, 2, 3)

Samples = int | str


@dataclass(frozen=True)
class Options:
    """Every option of a check, shared by ``check_gradients``, ``check_problem``, the torch and JAX
    ``check_function`` and ``check_module``, the pytest helpers ``assert_gradients`` and the command line.

    Attributes
    ----------
    samples : int or "all", default 16
        Coordinates per parameter (min(samples, N)), or every one.
    step : float, "auto" or Mapping[str, float], optional
        The requested step h of every coordinate, or per parameter by name; ``"auto"`` advises each
        parameter's step first. Default: the dtype's ε^(1/3)·max(1, |θ|) per coordinate.
    tolerance : float, optional
        The relative tolerance. Default: the dtype's ε^(1/3).
    seed : int, default 0
        Everything a check draws: the directional test's ±1 signs, the torch and JAX cotangents and
        tangents.
    jobs : int or concurrent.futures.Executor, optional
        Worker processes for the coordinates' probes (docs/parallel.md).
    fast : bool, default False
        The whole-gradient fast check: each parameter's directional test alone, in a constant number
        of calls, its coordinates probed only where that test does not pass (docs/method.md, "The fast
        check"). Not with ``coordinates``.
    order : 1, 2 or 3, default 1
        torch and JAX: the highest order of derivative checked; every order up to it is checked in
        every mode, recursing as ``jax.test_util.check_grads`` does (docs/method.md, "Every order in
        every mode").
    modes : tuple of "rev" and "fwd", default ("rev",)
        torch and JAX: reverse mode (the vjp, a Function's backward) and/or forward mode (the jvp).
    batched : bool, default False
        torch and JAX: also check that each backward (and forward rule) under ``vmap`` over a batch of
        cotangents (tangents) equals the loop of single calls.
    nondet_tol : float, default 0.0
        torch and JAX: how far two calls of a backward with the same cotangent may differ (largest
        absolute difference); 0.0 asks for bit-identical gradients.
    masked : bool, optional
        torch's word for a sparse input: True (and None, the default) checks its stored values only;
        False, the derivative at its unstored elements too, is refused (docs/torch.md, "Sparse and mkldnn inputs").
    kink_tolerance : float or Mapping[str, float], optional
        Tolerance on the one-sided slopes' scaled gap. Default: the one that goes with the step.
    coordinates : Mapping[str, iterable of index tuples], optional
        Explicit coordinates for some parameters; the others are selected by ``sampler``.
    names : iterable of str, optional
        Check only these parameters (the problem's order is kept).
    sampler : "structured" or "chapter", default "structured"
    progress : callable (done, total) -> None, optional
        Called with (0, total) before the first objective call and as coordinates are done.
    """

    samples: Samples = CHECK_SAMPLES
    step: None | float | str | Mapping = None
    tolerance: float | None = None
    seed: int = SEED
    jobs: object = None
    fast: bool = False
    order: int = 1
    modes: tuple = ("rev",)
    batched: bool = False
    nondet_tol: float = 0.0
    masked: bool | None = None
    kink_tolerance: None | float | Mapping = None
    coordinates: Mapping | None = None
    names: Iterable[str] | None = None
    sampler: str = "structured"
    progress: Callable[[int, int], None] | None = None


#: Every option's name, in the record's order.
OPTION_NAMES = tuple(field.name for field in dataclasses.fields(Options))


def is_auto(step) -> bool:
    """Whether ``step`` asks for the advised step of each parameter."""
    return isinstance(step, str) and step == AUTO_STEP


def is_serial(jobs) -> bool:
    """Whether ``jobs`` asks for no workers (None or 1): then parallel.py and concurrent.futures are not imported."""
    return jobs is None or (type(jobs) is int and jobs == 1)


def options_of(entry: str, given: Mapping, *, functions: bool = False) -> Options:
    """``given`` (an entry point's keyword arguments) as :class:`Options`, each checked by itself.

    ``entry`` names the entry point in messages; ``functions`` is whether it checks a torch or JAX
    function (``order``, ``modes``, ``batched`` and ``nondet_tol`` apply only there). A step or tolerance per parameter waits for
    the parameters (:func:`~gradcheck_cli.check.plan.plan_check`).
    """
    unknown = [name for name in given if name not in OPTION_NAMES]
    if unknown:
        close = did_you_mean(str(unknown[0]), OPTION_NAMES)
        raise UnknownOption(entry=entry, option=repr(unknown[0]), close=close, known=list(OPTION_NAMES))
    options = Options(**given)
    step, tolerance = options.step, options.tolerance
    if not (step is None or is_auto(step) or isinstance(step, Mapping)):
        validate_step(step)
    if tolerance is not None and not isinstance(tolerance, Mapping):
        validate_tolerance(tolerance)
    if not is_serial(options.jobs):
        from .parallel import worker_count

        worker_count(options.jobs)
    _whole_number("seed", options.seed)
    if not isinstance(options.fast, bool):
        raise InvalidArgument(argument="fast", value=repr(options.fast), expected="True or False")
    if options.fast and options.coordinates is not None:
        raise InvalidArgument(
            argument="fast", value="True", expected="False when coordinates are listed (a fast check probes none)"
        )
    if options.masked is not None and not isinstance(options.masked, bool):
        raise InvalidArgument(argument="masked", value=repr(options.masked), expected="True, False or None")
    if options.progress is not None and not callable(options.progress):
        raise InvalidArgument(argument="progress", value=type(options.progress).__name__, expected="callable")
    _derivative_calls(options, entry, functions)
    return dataclasses.replace(options, modes=_modes(options, entry, functions))


def _modes(options: Options, entry: str, functions: bool) -> tuple:
    """The modes as a tuple in MODES' order; order and modes other than the defaults only for functions."""
    modes = options.modes
    if isinstance(modes, str) or not isinstance(modes, Iterable):
        raise InvalidArgument(
            argument="modes", value=repr(modes), expected='a tuple of "rev" and "fwd", such as ("rev",)'
        )
    modes = tuple(modes)
    if not modes or any(mode not in MODES for mode in modes) or len(set(modes)) != len(modes):
        raise InvalidArgument(argument="modes", value=repr(modes), expected='("rev",), ("fwd",) or ("fwd", "rev")')
    order = options.order
    if type(order) is not int or order not in ORDERS:
        raise InvalidArgument(argument="order", value=repr(order), expected="1, 2 or 3")
    if not functions and (order != 1 or modes != ("rev",)):
        expected = "1 and ('rev',) for a problem's own gradients (order and modes are for torch and JAX functions)"
        raise InvalidArgument(argument=f"{entry}'s order and modes", value=f"{order} and {modes!r}", expected=expected)
    return tuple(mode for mode in MODES if mode in modes)


def _derivative_calls(options: Options, entry: str, functions: bool) -> None:
    """``batched`` True or False and ``nondet_tol`` a finite number ≥ 0; other than the defaults only for functions."""
    if not isinstance(options.batched, bool):
        raise InvalidArgument(argument="batched", value=repr(options.batched), expected="True or False")
    tolerance = options.nondet_tol
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0.0 <= tolerance < math.inf:
        raise InvalidArgument(argument="nondet_tol", value=repr(tolerance), expected="a finite number ≥ 0")
    if not functions and (options.batched or tolerance != 0.0):
        expected = (
            "False and 0.0 for a problem's own gradients (batched and nondet_tol are for torch and JAX functions)"
        )
        given = f"{options.batched} and {tolerance!r}"
        raise InvalidArgument(argument=f"{entry}'s batched and nondet_tol", value=given, expected=expected)


def _whole_number(name: str, value) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise InvalidArgument(argument=name, value=repr(value), expected="a whole number") from None
