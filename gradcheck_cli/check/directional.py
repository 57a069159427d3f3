"""The whole-parameter directional test: every coordinate moved at once along a fixed ±1 direction.

An error at a coordinate the selection left out still changes ⟨analytic, Δ⟩. The rules are in
docs/method.md ("The directional test").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..core.record import Record
from ..engine.blocks import block_bounds
from ..engine.estimator import evaluated_value
from ..engine.tensors import write_back
from ..errors import NonFiniteEvaluation, ParameterChanged, ReadOnlyArray
from ..verdict.estimates import NoiseModel, estimate_of, value_epsilons
from ..verdict.terms import ROUNDING_FACTOR, DirectionalEstimate, JudgedEstimate, slopes_agree
from .directional_probes import (
    CHANGED,
    DirectionScale,
    DirectionalProbing,
    minus_pass,
    norms,
    plus_pass,
    trusted_squares,
)

__all__ = ["DirectionalCheck", "DirectionalProbe", "directional_estimate", "probe_direction", "probe_joint"]


@dataclass(frozen=True)
class DirectionalCheck(Record):
    """The directional test of one parameter.

    The probes are θ₊ = θ + m·Δ (:class:`Direction`, m the multiplier of each estimate) and its
    reflection θ₋ = θ − (θ₊ − θ), each rounded into the parameter's dtype, and s = θ₊ − θ₋ the
    actual displacement. The numerical value is (f(θ₊) − f(θ₋)) / 2m, the analytic one
    Σ a_i s_i / 2m, their scale max(|a|, |n|, ‖a∘s‖₂ / 2m).
    ``estimates`` holds each multiplier tried, the first m = 1; ``decided_at`` the one the
    verdict rests on.
    """

    elements: int
    moved: int
    minus_value: float
    plus_value: float
    estimates: tuple
    decided_at: int
    verdict: str
    reason: str
    passed: bool
    joint: tuple = ()  # the parameters moved together in these probes (a fast check's joint direction), else ()


@dataclass(frozen=True, slots=True)
class DirectionalProbe(Record):
    """What one multiplier's two probes gave: values, displacements' products with a, moved count."""

    multiplier: float
    minus_value: float
    plus_value: float
    analytic: float
    scale: float
    moved: int


def probe_direction(
    probing: DirectionalProbing,
    multiplier: float,
    required: bool = False,
    scale: DirectionScale | None = None,
    changed: Callable[[], Exception] | None = None,
) -> DirectionalProbe | None:
    """Evaluate f at θ₊ = θ + multiplier·Δ and θ₋ = θ − (θ₊ − θ), rounded; None when they are unusable.

    The array is restored from the saved copy after each call, on every path. Unusable: a probe
    overflows the dtype, no element moves, or f is not finite there (NonFiniteEvaluation when
    ``required``: the first pass's probes, like a coordinate's own); a value that is not one real
    number is NonScalarEvaluation. With ``scale`` (multiplier 1), its norm is taken in the plus
    probe's pass (``scale.norm``). With ``changed``, ``array`` must hold ``saved``'s bits before the
    plus probe is written, and θ₊ when θ₋ is computed from it: where it does not, ``array`` is
    restored and ``changed()`` raised (made only then: an error formats its message as it is made).
    Every pass goes a block at a time (:mod:`gradcheck_cli.engine.blocks`).
    """
    array, saved, evaluate = probing.array, probing.saved, probing.evaluate
    bounds = block_bounds(array.size)
    try:
        sums = plus_pass(probing, multiplier, bounds, scale, changed is not None)
        if sums is None or sums is CHANGED:
            write_back(array, Ellipsis, saved)
            if sums is CHANGED:
                raise changed()
            return None
        plus_value = evaluate()
    except BaseException:
        write_back(array, Ellipsis, saved)
        raise
    if not array.flags.writeable:
        write_back(array, Ellipsis, saved)
        raise ReadOnlyArray(role="parameters", during_check=True)
    try:
        plus_value = evaluated_value("plus", plus_value)
        if not minus_pass(probing, bounds, sums.checksums):  # restored: θ₊ was changed by the call
            if changed is not None:
                raise changed()
            return None
        minus_value = evaluate()
    except NonFiniteEvaluation:
        write_back(array, Ellipsis, saved)
        if required:
            raise
        return None
    except BaseException:
        write_back(array, Ellipsis, saved)
        raise
    if not write_back(array, Ellipsis, saved):
        raise ReadOnlyArray(role="parameters", during_check=True)
    try:
        minus_value = evaluated_value("minus", minus_value)
    except NonFiniteEvaluation:
        if required:
            raise
        return None
    norm = norms(probing, multiplier, sums, scale)
    return DirectionalProbe(
        multiplier=multiplier,
        minus_value=minus_value,
        plus_value=plus_value,
        analytic=sums.dot / (2 * multiplier),
        scale=norm / (2 * multiplier),
        moved=sums.moved,
    )


def probe_joint(probings: list, changed: Callable[[int], Exception]) -> tuple | None:
    """Every parameter of ``probings`` moved along its own direction at once (multiplier 1): θ₊
    written into each array, f once, θ₋ into each, f once, every array restored on every path.

    ``(DirectionalProbe of the whole, each parameter's share min(‖a∘s‖₂, |Σ a·s|)/2)``: the size of
    an error in it that the joint estimate shows, and of one proportional to its gradient; None where one parameter's
    probes are unusable (a probe overflows, no element moves, a sum of squares cannot be trusted)
    or f raises or is not finite there: its own probes then say which. ``changed(k)`` is raised
    where the objective changed parameter k (as :func:`probe_direction`'s ``changed``)."""
    evaluate, written, passes = probings[0].evaluate, [], []
    try:
        for k, probing in enumerate(probings):
            bounds = block_bounds(probing.array.size)
            written.append(probing)
            sums = plus_pass(probing, 1.0, bounds, None, compare=True)
            if sums is CHANGED:
                raise changed(k)
            if sums is None or not (sums.squares == 0.0 or trusted_squares(sums.squares)):
                return None
            passes.append((bounds, sums))
        plus_value = evaluated_value("plus", evaluate())
        for k, (probing, (bounds, sums)) in enumerate(zip(probings, passes)):
            if not probing.array.flags.writeable:
                raise ReadOnlyArray(role="parameters", during_check=True)
            if not minus_pass(probing, bounds, sums.checksums):
                raise changed(k)
        minus_value = evaluated_value("minus", evaluate())
    except (ParameterChanged, ReadOnlyArray):
        raise
    except Exception:  # noqa: BLE001 (f not usable at the joint probes: each parameter's own say why)
        return None
    finally:
        restored = [write_back(probing.array, Ellipsis, probing.saved) for probing in written]
    if not all(restored):
        raise ReadOnlyArray(role="parameters", during_check=True)
    shares = tuple(min(math.sqrt(sums.squares), abs(sums.dot)) / 2 for _, sums in passes)
    probe = DirectionalProbe(
        multiplier=1.0,
        minus_value=minus_value,
        plus_value=plus_value,
        analytic=math.fsum(sums.dot for _, sums in passes) / 2,
        scale=math.sqrt(math.fsum(sums.squares for _, sums in passes)) / 2,
        moved=sum(sums.moved for _, sums in passes),
    )
    return probe, shares


def directional_estimate(
    probe: DirectionalProbe, center: float, noise: NoiseModel, scale: float, own_scale: float
) -> JudgedEstimate:
    """The probe's JudgedEstimate: per unit multiplier, bar from |f| (at the ``noise``'s ε) and its
    jitter, slopes against f(θ) at its kink tolerance.

    ``scale`` is the largest directional scale of the check, against which the slopes are compared;
    ``own_scale`` this direction's ‖g∘Δ‖₂ read from the numerical side (docs/method.md, "The
    directional test"), what the tolerance is relative to beside max(|a|, |n|).
    """
    m = probe.multiplier
    numerical = (probe.plus_value - probe.minus_value) / (2 * m)
    left, right = (center - probe.minus_value) / m, (probe.plus_value - center) / m
    largest = max(abs(probe.minus_value), abs(center), abs(probe.plus_value))
    epsilon = float(value_epsilons([probe.minus_value], center, [probe.plus_value], noise.epsilon)[0])
    jitter = noise.jitter
    slope_noise = 4 * (ROUNDING_FACTOR * epsilon * largest + jitter) / m
    consistent = slopes_agree(left, right, noise.kink_tolerance, max(scale, own_scale), slope_noise)
    return estimate_of(
        m,
        probe.analytic,
        numerical,
        largest_value=largest,
        epsilon=epsilon,
        jitter=jitter,
        gain=1.0 / m,
        consistent=consistent,
        scale=max(abs(probe.analytic), abs(numerical), own_scale),
        record=DirectionalEstimate,
    )
