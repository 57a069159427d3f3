"""Probes in the parameter's own arithmetic: float64, float32, float16 and bfloat16.

The probes are the exact real numbers θ ∓ h rounded once, to nearest with ties to even, into the
parameter's format (:meth:`ProbeDtype.round_exact`, integer arithmetic: never a double rounding),
the spacings h₋, h₊ the differences of the stored values, and each dtype's default step, tolerance
and kink tolerance ε^(1/3), ε^(1/3) and ε^(1/6). The reasons are in docs/method.md, "Dtypes".

This module is the single source of every dtype's format, ε and name, for tensors and for scalar
step advice alike, so it imports only ``math`` and ``fractions``: numpy is loaded by
:func:`probe_dtype` only to normalise a dtype that is not already one of the names in
:data:`PROBE_DTYPES` or Python's ``float``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..core.record import Record
from ..errors import NonFinitePoint, UnsupportedDtype
from .estimator import ProbeGeometry, perturbations, probe_geometry, validate_step

__all__ = [
    "PROBE_DTYPES",
    "ProbeDtype",
    "probe_dtype",
    "unsupported_dtype",
    "nearest_dtype",
    "supported_text",
    "dtype_perturbations",
]


@dataclass(frozen=True)
class ProbeDtype(Record):
    """A parameter dtype the check probes in: its binary format and default policy.

    Attributes
    ----------
    name : str
        ``"float64"``, ``"float32"``, ``"float16"`` or ``"bfloat16"``.
    significand_bits : int
        p, the leading bit included (53, 24, 11, 8).
    min_exponent : int
        e of the smallest normal number 2ᵉ (−1022, −126, −14, −126).
    max_exponent : int
        e of the largest binade [2ᵉ, 2ᵉ⁺¹) (1023, 127, 15, 127).
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

    def default_step(self, point):
        """The default requested step ε^(1/3)·max(1, |θ|) at ``point``: a float, or a numpy array
        (then a step for each element, as an array of float64)."""
        if hasattr(point, "shape") and point.shape:
            return self.step_factor * abs(point.astype("float64")).clip(min=1.0)
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
    "float16": _probe_dtype("float16", 11, -14, 15),
    "bfloat16": _probe_dtype("bfloat16", 8, -126, 127),
}


def probe_dtype(dtype, role: str = "parameters") -> ProbeDtype:
    """The :class:`ProbeDtype` of a numpy dtype (or anything ``np.dtype`` accepts).

    The names ``"float64"``, ``"float32"``, ``"bfloat16"``, Python's ``float``
    and ``None`` (numpy's default, float64) never import numpy, so scalar
    work stays numpy-free. bfloat16 is ``ml_dtypes.bfloat16``; it is
    recognised by name, so ml_dtypes is never imported here (an array of
    that dtype has already imported it). Integers, complex (a check takes
    it as two real parts, :mod:`complex_parts`) and everything else are an
    :class:`UnsupportedDtype` naming ``role`` and the nearest supported dtype.
    """
    if dtype is None or dtype is float:
        name = "float64"
    elif isinstance(dtype, str) and dtype in PROBE_DTYPES:
        name = dtype
    elif type(dtype).__module__ == "numpy.dtypes" and dtype in _BY_DTYPE:  # a numpy dtype seen before
        return _BY_DTYPE[dtype]
    else:
        import numpy as np

        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = str(dtype)
    try:
        found = PROBE_DTYPES[name]
    except KeyError:
        raise unsupported_dtype(role, name) from None
    if type(dtype).__module__ == "numpy.dtypes":
        _BY_DTYPE[dtype] = found
    return found


_BY_DTYPE = {}  # numpy dtype → its ProbeDtype: reading a dtype's name is slow in numpy 2


#: The complex dtypes a check takes as their real and imaginary parts (engine/complex_parts.py).
COMPLEX_NAMES = ("complex128", "complex64")


def unsupported_dtype(role: str, name: str) -> UnsupportedDtype:
    """UnsupportedDtype for an array of dtype ``name``: what is supported, and the nearest supported form
    (the complex dtypes only for a check's parameters, which takes them as two real parts)."""
    parts = role == "parameters"
    nearest = nearest_dtype(name, parts)
    expected = f"{supported_text(parts, 'or')}; the nearest is {nearest}: pass .astype({nearest!r})"
    return UnsupportedDtype(role=role, dtype=name, expected=expected)


def supported_text(complex_parts: bool = True, conjunction: str = "and") -> str:
    """The dtypes a check probes, in words: ``float64, float32, float16, bfloat16, complex128 and complex64``."""
    supported = [*PROBE_DTYPES, *(COMPLEX_NAMES if complex_parts else ())]
    return f"{', '.join(supported[:-1])} {conjunction} {supported[-1]}"


def nearest_dtype(name: str, complex_parts: bool = True) -> str:
    """The supported dtype closest to ``name`` (a numpy, torch or JAX dtype's name): complex32 → complex64,
    a wider complex → complex128 (without ``complex_parts``, the float of their parts), a float narrower
    than 16 bits → float16, anything else (integers, bool, float128) → float64."""
    name = name.removeprefix("torch.")
    if name.startswith("complex") or name in ("chalf", "cfloat", "cdouble"):
        target = "complex64" if name in ("complex32", "chalf", "complex64") else "complex128"
        if not complex_parts:
            target = "float32" if target == "complex64" else "float64"
    elif name.startswith(("float8", "float4", "float6")):
        target = "float16"
    else:
        target = "float64"
    return target


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
        For float64 exactly :func:`~gradcheck_cli.engine.estimator.perturbations`
        (the chapter's fl(θ∓h), IEEE-correct already). For float32, float16
        and bfloat16, the exact θ ∓ h rounded once into the dtype; a probe that
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
