"""Probes in the parameter's own arithmetic: float64, float32 and bfloat16.

The chapter probes an f64 point θ at fl(θ−h) and fl(θ+h). A float32 or
bfloat16 parameter can only hold values of its own format, so here the
probes are the exact real numbers θ ∓ h rounded **once**, to nearest with
ties to even, into that format: exactly the values the user's array can
store. The spacings h₋ = θ − θ₋ and h₊ = θ₊ − θ are then differences of two
stored values, and the chapter's actual-spacing stencil carries over as is.

Why the exact sum and not ``dtype(θ − h)``
------------------------------------------
``θ − h`` in Python is already rounded to f64; rounding that again into
float32 is a second rounding, and the two can disagree with one correct
rounding when the first lands exactly on a float32 halfway point. With
θ = 1 (float32) and h = 2⁻²⁴ + 2⁻⁷⁶ (an f64), the exact θ + h lies just
above the halfway point 1 + 2⁻²⁴, so its float32 rounding is 1 + 2⁻²³; but
fl64(θ + h) = 1 + 2⁻²⁴ exactly, and float32 rounds that tie to even: 1.0,
a probe that collapses onto θ. (The classic "2p + 2 bits make double
rounding harmless" theorem needs both operands in the narrow format; h is
not.) ml_dtypes 0.6 also converts float64 → bfloat16 *through* float32, a
second double rounding: 1 + 2⁻⁸ + 2⁻³⁰ becomes 1.0 instead of 1 + 2⁻⁷. So
:meth:`ProbeDtype.round_exact` rounds the exact rational θ ∓ h with integer
arithmetic, and only the already-representable result is ever converted.

Spacings
--------
h₋ and h₊ are computed in f64 from the two stored values. Both are values
of a format with at most 24 significand bits, so their difference is exact
in f64 whenever their exponents are at most 28 (float32) or 44 (bfloat16)
binades apart — in particular whenever h ≤ |θ|/2, and for every default step
unless 0 < |θ| < 2⁻³⁶ (float32) or 2⁻⁴⁷ (bfloat16). Otherwise (a probe
across zero from a tiny θ) it is the correctly rounded f64 difference,
within 2⁻⁵³ relative: far below anything the comparison resolves.

Defaults, and why
-----------------
With ε the dtype's machine epsilon (2⁻⁵², 2⁻²³, 2⁻⁷):

* **Step** h = ε^(1/3)·max(1, |θ|). The three-point estimate's error is about
  truncation (|f‴|/6)·h² plus rounding ε·|f|/h; for an objective evaluated
  in the parameter's precision, with f and f‴ of unit size, the two balance
  at h ∝ ε^(1/3), where the error is about ε^(2/3). The factor max(1, |θ|)
  keeps the step relative for large parameters, so the probes stay about
  ε^(−2/3) ulps from θ (2.7e10 for float64, 4.1e4 for float32, 25 for
  bfloat16): in bfloat16 the actual spacings can still differ from h by
  2 %, which is why they, and never 2h, go into the stencil.
  float64: 6.06e-6, float32: 4.92e-3, bfloat16: 0.198.
* **Tolerance** ε^(1/3) on the chapter's scaled error. A right gradient
  lands near ε^(2/3) (3.7e-11, 2.4e-5, 3.9e-2) and a wrong one (a missing
  factor, a transposition, a sign) near 1; ε^(1/3) is their geometric
  midpoint, leaving a factor ε^(−1/3) of headroom on each side: 1.6e5 for
  float64, 203 for float32, 5.0 for bfloat16. Objectives that accumulate
  rounding over many operations sit above ε^(2/3) and use part of that
  headroom. bfloat16 checks catch gross errors only.
  float64: 6.06e-6, float32: 4.92e-3, bfloat16: 0.198.
* **Kink tolerance** ε^(1/6) on the one-sided slopes' scaled gap. At a
  smooth point the two secant slopes differ by about |f″|·(h₋+h₊)/2, i.e.
  ε^(1/3) for unit curvature at the default step; across a kink they differ
  by the jump in slope, of order 1. ε^(1/6) is again the geometric midpoint
  (headroom 406, 14, 2.2). float64: 2.46e-3, float32: 7.02e-2,
  bfloat16: 0.445. This is the kink tolerance at the default step; at a
  larger step h the midpoint moves up to √(h / max(1, |θ|)), which
  :func:`~gradcheck_cli.check.check_gradients` uses by default per
  coordinate (:func:`~gradcheck_cli.check.kink_tolerance_for_step`).

None of these is universally right (the chapter's scan shows why); every one
can be overridden.

Imports
-------
This module is the single source of every dtype's format, ε and name, for
tensors and for scalar step advice alike, so it imports only ``math`` and
``fractions``: numpy is loaded by :func:`probe_dtype` only to normalise a
dtype that is not already one of the names in :data:`PROBE_DTYPES` or
Python's ``float``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .errors import NonFinitePoint, UnsupportedDtype
from .estimator import ProbeGeometry, perturbations, probe_geometry, validate_step
from .records import Record

__all__ = [
    "PROBE_DTYPES",
    "ProbeDtype",
    "probe_dtype",
    "dtype_perturbations",
]


@dataclass(frozen=True)
class ProbeDtype(Record):
    """A parameter dtype the check probes in: its binary format and default policy.

    Attributes
    ----------
    name : str
        ``"float64"``, ``"float32"`` or ``"bfloat16"``.
    significand_bits : int
        p, the leading bit included (53, 24, 8).
    min_exponent : int
        e of the smallest normal number 2ᵉ (−1022, −126, −126).
    max_exponent : int
        e of the largest binade [2ᵉ, 2ᵉ⁺¹) (1023, 127, 127).
    max_finite : float
        The largest finite value.
    epsilon : float
        2^(1−p), the distance from 1 to the next value.
    step_factor : float
        ε^(1/3); the default step is ``step_factor·max(1, |θ|)``.
    tolerance : float
        ε^(1/3), the default tolerance on the scaled error.
    kink_tolerance : float
        ε^(1/6), the default tolerance on the one-sided slopes' scaled gap.
    """

    name: str
    significand_bits: int
    min_exponent: int
    max_exponent: int
    max_finite: float
    epsilon: float
    step_factor: float
    tolerance: float
    kink_tolerance: float

    def default_step(self, point: float) -> float:
        """The default requested step ε^(1/3)·max(1, |θ|) at ``point``."""
        return self.step_factor * max(1.0, abs(float(point)))

    def round_exact(self, value: Fraction) -> float:
        """Round an exact rational to the nearest value of this format, ties to even.

        One correct rounding, subnormals included; past the largest finite
        value it overflows to a signed infinity exactly as IEEE does (at or
        beyond max + ulp/2). The result is an f64 that the format holds
        exactly, so converting it to the dtype is exact.
        """
        if value == 0:
            return 0.0
        magnitude = abs(value)
        numerator, denominator = magnitude.numerator, magnitude.denominator
        # floor(log2(magnitude)) is one of two candidates from the bit lengths.
        exponent = numerator.bit_length() - denominator.bit_length()
        if _below_power_of_two(numerator, denominator, exponent):
            exponent -= 1
        if exponent > self.max_exponent:
            rounded = math.inf
        else:
            quantum = max(exponent, self.min_exponent) - (self.significand_bits - 1)
            if quantum >= 0:
                units, remainder = divmod(numerator, denominator << quantum)
                twice_remainder, unit = 2 * remainder, denominator << quantum
            else:
                units, remainder = divmod(numerator << -quantum, denominator)
                twice_remainder, unit = 2 * remainder, denominator
            if twice_remainder > unit or (twice_remainder == unit and units % 2 == 1):
                units += 1
            # units ≤ 2**p and the quantum lies in f64's range: ldexp is exact.
            rounded = math.ldexp(float(units), quantum)
            if rounded > self.max_finite:
                rounded = math.inf
        return -rounded if value < 0 else rounded


def _below_power_of_two(numerator: int, denominator: int, exponent: int) -> bool:
    """Whether numerator/denominator < 2**exponent, exactly."""
    if exponent >= 0:
        return numerator < denominator << exponent
    return numerator << -exponent < denominator


def _probe_dtype(name, significand_bits, min_exponent, max_exponent) -> ProbeDtype:
    epsilon = 2.0 ** (1 - significand_bits)
    max_finite = math.ldexp(2.0 - epsilon, max_exponent)
    return ProbeDtype(
        name=name,
        significand_bits=significand_bits,
        min_exponent=min_exponent,
        max_exponent=max_exponent,
        max_finite=max_finite,
        epsilon=epsilon,
        step_factor=epsilon ** (1.0 / 3.0),
        tolerance=epsilon ** (1.0 / 3.0),
        kink_tolerance=epsilon ** (1.0 / 6.0),
    )


#: Every supported dtype by name, most precise first.
PROBE_DTYPES = {
    "float64": _probe_dtype("float64", 53, -1022, 1023),
    "float32": _probe_dtype("float32", 24, -126, 127),
    "bfloat16": _probe_dtype("bfloat16", 8, -126, 127),
}


def probe_dtype(dtype, role: str = "parameters") -> ProbeDtype:
    """The :class:`ProbeDtype` of a numpy dtype (or anything ``np.dtype`` accepts).

    The names ``"float64"``, ``"float32"``, ``"bfloat16"``, Python's ``float``
    and ``None`` (numpy's default, float64) never import numpy, so scalar
    work stays numpy-free. bfloat16 is ``ml_dtypes.bfloat16``; it is
    recognised by name, so ml_dtypes is never imported here (an array of
    that dtype has already imported it). float16, integers, complex and
    everything else are an :class:`UnsupportedDtype` naming ``role``.
    """
    if dtype is None or dtype is float:
        name = "float64"
    elif isinstance(dtype, str) and dtype in PROBE_DTYPES:
        name = dtype
    else:
        import numpy as np

        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = str(dtype)
    try:
        return PROBE_DTYPES[name]
    except KeyError:
        raise UnsupportedDtype(role=role, dtype=name, expected="float64, float32 or bfloat16") from None


def dtype_perturbations(point: float, step: float, dtype: ProbeDtype) -> ProbeGeometry:
    """The actual probes of ``point`` in ``dtype``'s own arithmetic, and their stencil.

    Parameters
    ----------
    point : float
        A finite value stored in ``dtype`` (every element of such an array is).
    step : float
        The positive finite requested step h (an f64).
    dtype : ProbeDtype

    Returns
    -------
    ProbeGeometry
        For float64 exactly :func:`~gradcheck_cli.estimator.perturbations`
        (the chapter's fl(θ∓h), IEEE-correct already). For float32 and
        bfloat16, the exact θ ∓ h rounded once into the dtype; a probe that
        rounds back to θ is the chapter's PerturbationUnchanged, one that
        overflows the dtype PerturbationNotFinite.
    """
    if dtype.significand_bits == 53:
        return perturbations(point, step)
    step = validate_step(step)
    point = float(point)
    if not math.isfinite(point):
        raise NonFinitePoint(point=point)
    exact_point, exact_step = Fraction(point), Fraction(step)
    minus_point = dtype.round_exact(exact_point - exact_step)
    plus_point = dtype.round_exact(exact_point + exact_step)
    return probe_geometry(point, step, minus_point, plus_point)
