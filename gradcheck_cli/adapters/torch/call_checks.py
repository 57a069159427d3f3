"""The checks of a torch derivative's calls, made once before any finite difference: the backward
called twice with the same cotangent (determinism, within ``nondet_tol``), called with output gradients
undefined (as ``torch.autograd.gradcheck``'s ``check_undefined_grad``), and, with ``batched=True``,
under vmap over a batch of cotangents or tangents against the loop of single calls (its
``check_batched_grad`` and ``check_batched_forward_grad``). The rules are docs/method.md's "The
derivative calls"."""

from __future__ import annotations

import warnings

import numpy as np

from ...check import Options
from ...check.derivatives import (
    BATCH,
    BATCHING,
    DETERMINISM,
    UNDEFINED,
    agreement_check,
    call_tolerance,
    determinism_check,
    raised_check,
    relative_limits,
    selected,
)
from ...engine.cotangents import tangent
from .derivatives import Bound, forward_derivative, pulled_back
from .outputs import output_cotangent
from .views import gradient_array, torch

__all__ = ["reverse_call_checks", "forward_call_checks"]


def reverse_call_checks(bound: Bound, outputs: list, u: dict, first: list, options: Options, seed: int) -> tuple:
    """``(the call checks, the observed variation)`` of a backward whose ``outputs`` (graph kept) gave
    the gradients ``first`` with ``u``."""
    used = [index for index in u if outputs[index].requires_grad]
    if not used:
        return (), 0.0
    views = selected(options, bound.views)  # the inputs the check is asked about
    tolerances = {name: call_tolerance(options, view.dtype) for name, view in views.items()}
    try:
        second = pulled_back(outputs, u, bound.xs, bound.call_text)
    except Exception as error:  # noqa: BLE001 (the second call raising is the finding)
        determinism = raised_check(DETERMINISM, next(iter(views)), error, "the backward called a second time")
        variation = 0.0
    else:
        pair = (arrays(first, bound, views), arrays(second, bound, views))
        determinism, variation = determinism_check(*pair, options.nondet_tol)
    checks = [determinism, *undefined_checks(bound, outputs, used, u, tolerances)]
    if options.batched:
        checks.append(batched_backward_check(bound, outputs, used, tolerances, seed))
    return tuple(checks), variation


def arrays(grads: list, bound: Bound, views: dict) -> dict:
    """The gradients of the inputs named in ``views``, as float64 arrays."""
    return {name: gradient_array(grad, x) for name, grad, x in zip(bound.names, grads, bound.xs) if name in views}


def undefined_checks(bound: Bound, outputs: list, used: list, u: dict, tolerances: dict) -> list:
    """The backward with every output's gradient undefined (against zero) and, for several outputs,
    with each one's undefined and the others' u (against the backward given zeros there)."""
    undefined_grad = torch._C._functions.UndefinedGrad  # what torch's own check wraps an output in
    views = {name: bound.views[name] for name in tolerances}
    cases = [(None, set(used))] + ([(index, {index}) for index in used] if len(used) > 1 else [])
    checks = []
    for output, undefined in cases:
        given = {index: torch.zeros_like(u[index]) if index in undefined else u[index] for index in used}
        wrapped = [undefined_grad()(value) if index in undefined else value for index, value in enumerate(outputs)]
        what = f"with {'every output' if output is None else f'output {output}'}'s gradient undefined, the backward"
        try:
            got = arrays(pulled_back(wrapped, given, bound.xs, bound.call_text), bound, views)
            if output is None:
                expected = {name: np.zeros(view.shape, dtype=view.dtype) for name, view in views.items()}
            else:
                expected = arrays(pulled_back(outputs, given, bound.xs, bound.call_text), bound, views)
        except Exception as error:  # noqa: BLE001 (a backward that breaks on a missing gradient is the finding)
            checks.append(raised_check(UNDEFINED, next(iter(views)), error, what, output))
            continue
        reference = "zero" if output is None else "the backward given zeros there"
        limits = relative_limits(expected, tolerances)
        checks.append(agreement_check(UNDEFINED, expected, got, limits, f"{what} and {reference}", output=output))
    return checks


def batched_backward_check(bound: Bound, outputs: list, used: list, tolerances: dict, seed: int):
    """The backward under vmap over BATCH cotangents against the loop of single calls: torch's own
    check's vmap (``torch._vmap_internals.vmap``), which batches a backward that calls a Function."""
    stacked = [torch.stack([output_cotangent(outputs[i], i, seed + 1 + b) for b in range(BATCH)]) for i in used]

    def single(*cotangents):
        return tuple(pulled_back(outputs, dict(zip(used, cotangents)), bound.xs, bound.call_text))

    what = f"the backward under vmap over {BATCH} cotangents"
    looped = [arrays(single(*(batch[b] for batch in stacked)), bound, tolerances) for b in range(BATCH)]
    expected = {name: np.stack([loop[name] for loop in looped]) for name in tolerances}
    try:
        batched = legacy_vmap(single)(*stacked)
    except Exception as error:  # noqa: BLE001 (a backward that breaks under vmap is the finding)
        return raised_check(BATCHING, next(iter(tolerances)), error, what)
    limits = relative_limits(expected, tolerances)
    return agreement_check(
        BATCHING, expected, arrays(batched, bound, tolerances), limits, f"{what} and the loop of single calls"
    )


def legacy_vmap(function):
    """``torch._vmap_internals.vmap(function)``, its notices silenced as torch's gradcheck silences them."""
    return quiet(lambda *arguments: torch._vmap_internals.vmap(function)(*arguments))


def quiet(function):
    """``function`` with vmap's notices silenced."""

    def call(*arguments):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="There is a performance drop")
            warnings.filterwarnings("ignore", message="Please use `torch.vmap`")
            return function(*arguments)

    return call


def flat_real(tensor):
    """A tensor flattened, in float64; a complex one as its real and imaginary parts."""
    return (torch.view_as_real(tensor.resolve_conj()) if tensor.is_complex() else tensor).reshape(-1).to(torch.float64)


def forward_call_checks(bound: Bound, g, nested: bool, kept: list, options: Options, seed: int) -> tuple:
    """With ``batched=True``, per input, g's forward derivative under vmap over BATCH tangents of that
    input against the loop of single calls (torch's ``check_batched_forward_grad``)."""
    if not options.batched or not kept:
        return ()
    # torch's own forward-AD batching check's vmap: functorch's has no batching rule for make_dual
    vmap = legacy_vmap if nested else lambda function: quiet(lambda t: torch._vmap_internals._vmap(function)(t))
    what = f"the forward derivative under vmap over {BATCH} tangents"
    expected, got, tolerances = {}, {}, {}
    chosen = selected(options, bound.origins)
    for index, (name, origin) in enumerate(bound.origins.items()):
        if name not in chosen:
            continue
        zeros = [torch.zeros(view.shape, dtype=torch.float64) for view in bound.views.values()]

        def single(t, index=index, zeros=zeros):
            moved = forward_derivative(g, [t if k == index else z for k, z in enumerate(zeros)], nested)(bound.xs)
            return torch.cat([flat_real(moved[i]) for i in kept])

        stacked = torch.stack([torch.from_numpy(tangent(origin, index, seed + 1 + b)) for b in range(BATCH)])
        expected[name] = np.stack([single(t).detach().numpy() for t in stacked])
        try:
            got[name] = vmap(single)(stacked).detach().numpy()
        except Exception as error:  # noqa: BLE001 (a rule that breaks under vmap is the finding)
            return (raised_check(BATCHING, name, error, what),)
        tolerances[name] = call_tolerance(options, origin.dtype)
    limits = relative_limits(expected, tolerances)
    return (agreement_check(BATCHING, expected, got, limits, f"{what} and the loop of single calls"),)
