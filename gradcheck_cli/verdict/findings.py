"""What a parameter's failing coordinates show when no kind of mistake fits them: where they are
(which slices fail, which pass), how analytic and numerical compare (the spread of their ratios),
the shape of analytic − numerical (one constant, a term ∝ θ, an offset per row, a reversed axis, a
copy of or a term ∝ another parameter's gradient) and how to see more.

Read off the records the check already has, deterministically; docs/method.md ("Diagnosis").
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "axis_text",
    "slices_text",
    "ratios_text",
    "difference_text",
    "other_parameter_text",
    "next_step",
    "shown",
]

#: analytic − numerical follows a model (a constant, c·θ, c·g) when within this share of its largest size.
MODEL_SPREAD = 2e-2
#: Two values are one (a copy, a mirror) within this relative gap (or two error bars).
MATCH_SPREAD = 1e-2
#: Indices listed before the rest are counted.
SHOWN_INDICES = 6


def _decided(check):
    return check.estimates[check.decided_at]


def shown(values: Sequence, limit: int = SHOWN_INDICES) -> str:
    """``2, 3, 5`` or ``0, 1, 2, 3, 4, 5 and 4 more``."""
    text = ", ".join(str(value) for value in values[:limit])
    return text + (f" and {len(values) - limit} more" if len(values) > limit else "")


def axis_text(rank: int, axis: int, indices: Sequence) -> str:
    """``row 3``, ``columns 1, 4``, ``element 2``, ``index 4 of axis 1``, ``indices 2, 3, 5 of axis 1``."""
    several = len(indices) > 1
    listed = shown(list(indices))
    if rank == 1:
        return f"element{'s' if several else ''} {listed}"
    if rank == 2:
        name = "row" if axis == 0 else "column"
        return f"{name}{'s' if several else ''} {listed}"
    return f"{'indices' if several else 'index'} {listed} of axis {axis}"


def _singular(rank: int, axis: int) -> str:
    return {1: "element", 2: "row" if axis == 0 else "column"}.get(rank, f"index of axis {axis}")


def slices_text(failing: Sequence, passing: list, checked: list, shape: tuple) -> str:
    """Where the failures are: on each axis where some checked index holds none, which hold them and
    which only pass (``rows 1, 3 hold the failures, rows 0, 2 only pass``); the axes every checked
    index of which holds one are named together. ``passing`` holds, per axis, the index of every
    coordinate that passed with a clearly nonzero numerical value, ``checked`` of every checked
    coordinate (numpy columns)."""
    rank = len(shape)
    if rank == 0:
        return "its one element fails"
    parts, everywhere = [], []
    for axis in range(rank):
        failed = sorted({check.coordinate[axis] for check in failing})
        if set(failed) >= set(np.asarray(checked[axis]).tolist()):
            everywhere.append(f"every checked {_singular(rank, axis)}")
            continue
        passed = sorted(set(np.asarray(passing[axis]).tolist()) - set(failed)) if passing else []
        text = f"{axis_text(rank, axis, failed)} {'hold' if len(failed) > 1 else 'holds'} the failures"
        if passed:
            text += f", {axis_text(rank, axis, passed)} only {'pass' if len(passed) > 1 else 'passes'}"
        parts.append(text)
    if everywhere:
        parts.append(f"{' and '.join(everywhere)} {'fails' if rank == 1 else 'holds a failure'}")
    return "; ".join(parts)


def _resolved(estimate) -> bool:
    return abs(estimate.numerical) > 2 * estimate.error_bar.total


def ratios_text(failing: Sequence) -> str:
    """The spread of analytic/numerical over the failing coordinates whose numerical value is
    clearly nonzero (``analytic/numerical ranges from 0.21 to 0.93, median 0.6``)."""
    ratios = sorted(e.analytic / e.numerical for e in map(_decided, failing) if _resolved(e))
    if not ratios:
        return "no failing coordinate has a numerical value clearly beyond its error bar"
    if len(ratios) == 1:
        return f"analytic/numerical is {ratios[0]:.4g} at the one failing coordinate that resolves it"
    text = (
        f"analytic/numerical ranges from {ratios[0]:.4g} to {ratios[-1]:.4g} (median {statistics.median(ratios):.4g})"
    )
    negative = sum(ratio < 0 for ratio in ratios)
    if 0 < negative < len(ratios):
        text += f", the sign differing at {negative} of {len(ratios)}"
    return text


def _fits(differences: np.ndarray, model: np.ndarray, bars: np.ndarray) -> bool:
    """analytic − numerical equals the model at every coordinate, within MODEL_SPREAD of its largest size."""
    with np.errstate(all="ignore"):  # gradients near the float64 limit: inf or NaN, never a fit
        allowed = MODEL_SPREAD * np.max(np.abs(differences)) + 2 * bars
        return bool(np.all(np.abs(differences - model) <= allowed))


def _proportional(differences: np.ndarray, basis: np.ndarray, bars: np.ndarray) -> float | None:
    """The c of analytic − numerical = c·basis, when it fits (at least two coordinates, basis not one value)."""
    if len(differences) < 2 or np.ptp(basis) == 0.0 or not np.any(basis):
        return None
    with np.errstate(all="ignore"):
        factor = float(np.dot(differences, basis) / np.dot(basis, basis))
    return factor if factor != 0.0 and _fits(differences, factor * basis, bars) else None


def _per_slice(differences: np.ndarray, coordinates: list, bars: np.ndarray, rank: int) -> str | None:
    """The slices (indices of one axis) within which analytic − numerical is one constant, when at
    least one slice holds two failures and the constants differ between slices."""
    for axis in range(rank):
        groups: dict = {}
        for position, coordinate in enumerate(coordinates):
            groups.setdefault(coordinate[axis], []).append(position)
        if len(groups) < 2 or max(map(len, groups.values())) < 2:
            continue
        model = np.empty_like(differences)
        for members in groups.values():
            model[members] = np.median(differences[members])
        if _fits(differences, model, bars):
            slice_name = {(2, 0): "row", (2, 1): "column"}.get((rank, axis), f"index of axis {axis}")
            return (
                f"analytic − numerical is one constant within each {slice_name} and differs between them: a "
                f"term per {slice_name} (a mean or sum over it subtracted twice, or not at all) on one side only"
            )
    return None


def _reversed_axis(failing: Sequence, gradient: np.ndarray) -> str | None:
    """The axis along which every failing numerical value is the analytic value at the mirrored index."""
    for axis in range(gradient.ndim):
        extent = gradient.shape[axis]
        if extent < 2 or all(2 * check.coordinate[axis] == extent - 1 for check in failing):
            continue
        matched = True
        for check in failing:
            estimate = _decided(check)
            mirrored = list(check.coordinate)
            mirrored[axis] = extent - 1 - mirrored[axis]
            other = float(gradient[tuple(mirrored)])
            allowed = max(MATCH_SPREAD * max(abs(other), abs(estimate.numerical)), 2 * estimate.error_bar.total)
            if abs(estimate.numerical - other) > allowed:
                matched = False
                break
        if matched:
            where = axis_text(gradient.ndim, axis, [0]).rsplit(" ", 1)[0]
            return (
                f"the numerical value at each failing coordinate is the analytic value at the mirrored {where} "
                f"(k ↔ {extent - 1} − k along axis {axis}): the gradient reversed along that axis (a kernel flipped, "
                "a convolution where a correlation belongs?)"
            )
    return None


def difference_text(failing: Sequence, gradient: np.ndarray) -> str | None:
    """The shape of analytic − numerical at the failing coordinates, when one fits: a reversed
    axis, one constant, a term ∝ θ, or a constant per slice; None otherwise."""
    with np.errstate(all="ignore"):  # values near the float64 limit fit nothing, and say nothing
        return _difference_text(failing, gradient)


def _difference_text(failing: Sequence, gradient: np.ndarray) -> str | None:
    reversed_text = _reversed_axis(failing, gradient)
    if reversed_text is not None:
        return reversed_text
    estimates = [_decided(check) for check in failing]
    with np.errstate(all="ignore"):
        differences = np.array([e.analytic - e.numerical for e in estimates])
    bars = np.array([e.error_bar.total for e in estimates])
    if len(failing) >= 2 and _fits(differences, np.full_like(differences, np.median(differences)), bars):
        return (
            f"analytic − numerical is the same {float(np.median(differences)):.4g} at every failing coordinate: a "
            "constant term (a bias, an ε, a stray 1) on one side only"
        )
    theta = np.array([check.difference.point for check in failing])
    factor = _proportional(differences, theta, bars)
    if factor is not None:
        return (
            f"analytic − numerical = {factor:.4g}·θ at every failing coordinate: a term proportional to the "
            "parameter (weight decay, an L2 penalty) on one side only"
        )
    return _per_slice(differences, [check.coordinate for check in failing], bars, gradient.ndim)


def other_parameter_text(name: str, failing: Sequence, gradients: Mapping) -> str | None:
    """How the failing analytic values relate to the analytic gradients of the other parameters of
    the same shape: equal to theirs (a copy), or analytic − numerical proportional to one; None
    when neither fits."""
    with np.errstate(all="ignore"):  # values near the float64 limit fit nothing, and say nothing
        return _other_parameter_text(name, failing, gradients)


def _other_parameter_text(name: str, failing: Sequence, gradients: Mapping) -> str | None:
    estimates = [_decided(check) for check in failing]
    analytic = np.array([e.analytic for e in estimates])
    differences = np.array([e.analytic - e.numerical for e in estimates])
    bars = np.array([e.error_bar.total for e in estimates])
    flat = [check.flat_index for check in failing]
    shape = np.shape(gradients.get(name))
    others = {
        other: np.asarray(gradient, dtype=np.float64).reshape(-1)[flat]
        for other, gradient in gradients.items()
        if other != name and np.shape(gradient) == shape
    }
    copied = [
        other
        for other, values in others.items()
        if np.any(analytic)
        and np.all(np.abs(analytic - values) <= MATCH_SPREAD * np.maximum(np.abs(analytic), np.abs(values)))
    ]
    if copied:
        return (
            f"the analytic values equal those of {' and '.join(copied)} at every failing coordinate: another "
            "parameter's gradient where this one's belongs (a copy-paste slip?)"
        )
    for other, values in others.items():
        factor = _proportional(differences, values, bars)
        if factor is not None:
            return (
                f"analytic − numerical = {factor:.4g} × {other}'s analytic gradient at every failing coordinate: a "
                f"term proportional to {other}'s gradient on one side only"
            )
    return None


def next_step(name: str, checked: int, size: int) -> str:
    """The check that shows more of the parameter."""
    if checked < size:
        return f"to see the whole pattern, check all {size} coordinates of {name} (samples='all', names=[{name!r}])"
    if size == 1:
        return f"the one coordinate of {name} was checked: the verbose output lists its estimates at every step"
    return f"every coordinate of {name} was checked: the verbose output lists each one's estimates"
