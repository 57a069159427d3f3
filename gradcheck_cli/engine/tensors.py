"""The array validation and write-back shared by the chapter's sampled check and check_gradients.

Both validate the two arrays with :func:`parameter_and_gradient`, decide where a coordinate is
unusable with :func:`plan_coordinates`, and restore the exact original bits with
:func:`write_back`, exceptions and KeyboardInterrupt included.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.record import Record
from ..errors import (
    GradCheckError,
    GradientShapeMismatch,
    InvalidArgument,
    MaskedValues,
    NonFiniteAnalyticGradient,
    NonFinitePoint,
    ReadOnlyArray,
    SelfOverlappingArray,
    UnsupportedDtype,
)
from .dtypes import ProbeDtype, dtype_perturbations, probe_dtype
from .estimator import ProbeGeometry
from .sampling import SampledCoordinate, at_coordinate, coordinate_from_offset, element_count, sample_tensor_coordinates

__all__ = [
    "SampledCoordinate",
    "PlannedCoordinate",
    "element_count",
    "coordinate_from_offset",
    "sample_tensor_coordinates",
    "parameter_and_gradient",
    "byte_bounds",
    "plain_view",
    "strides_may_overlap",
    "writable_memory",
    "plan_coordinates",
    "probing_objective",
    "write_back",
]


@dataclass(frozen=True, slots=True)
class PlannedCoordinate(Record):
    """One selected coordinate, validated before the first objective call.

    ``point`` is θ as stored, ``analytic`` the candidate there (both finite),
    ``step`` the requested h and ``geometry`` its probes in the array's own
    dtype (None with ``probes=False``, which the chapter's sampled check,
    the one caller, never asks for: check_gradients plans numpy columns in
    :mod:`sweep`).
    """

    sample: SampledCoordinate
    point: float
    analytic: float
    step: float | None
    geometry: ProbeGeometry | None


try:  # numpy >= 2.0
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # numpy < 2.0
    byte_bounds = np.byte_bounds


def writable_probe_dtype(parameters, role: str = "parameters") -> ProbeDtype:
    """The :class:`ProbeDtype` of a writable float64, float32, float16 or bfloat16 array, else a typed error.

    Writable means the flag and the memory under it (a view made over read-only pages, as torch
    makes of a read-only mmap, would be a segmentation fault at the first probe); and no two
    elements may share memory (a zero stride), since a probe of one would move the other.
    """
    if not isinstance(parameters, np.ndarray):
        raise InvalidArgument(argument=role, value=_type_name(parameters), expected="a numpy array")
    dtype = probe_dtype(parameters.dtype, role=role)
    if not (parameters.flags.writeable and writable_memory(parameters)):
        raise ReadOnlyArray(role=role, during_check=False)
    if strides_may_overlap(parameters.shape, parameters.strides, parameters.itemsize):
        raise SelfOverlappingArray(role=role, strides=list(parameters.strides))
    reject_masked(parameters, role)
    return dtype


def _type_name(value) -> str:
    """What a value that is not an array is, for InvalidArgument; a numpy scalar says how to make it one."""
    if isinstance(value, np.generic):
        return f"the numpy scalar {value!r}, which cannot be probed in place: np.array({value.item()!r}) is a 0-d array that can"
    return type(value).__name__


def plain_view(array: np.ndarray) -> np.ndarray:
    """``array`` as a plain ndarray over the same memory: an np.matrix's ``*`` is not elementwise."""
    return array if type(array) is np.ndarray else np.ndarray.view(array, np.ndarray)


def strides_may_overlap(shape, strides, itemsize: int) -> bool:
    """Whether two elements may share memory: each |stride| must exceed the span of the smaller ones."""
    if 0 in tuple(shape):  # no elements at all
        return False
    span = itemsize - 1
    for stride, _size in sorted((abs(stride), size) for size, stride in zip(shape, strides) if size > 1):
        if stride <= span:
            return True
        span += (_size - 1) * stride
    return False


def writable_memory(array: np.ndarray) -> bool:
    """Whether this process may write the memory under ``array`` (its first and last byte's pages).

    The kernel is asked to write each byte's own value there from a pipe, which fails with
    EFAULT on a read-only page instead of faulting; POSIX only (elsewhere: True). Memory numpy
    allocated itself (the array, or the array a view is over, owns its data) is writable: not asked.
    """
    if os.name != "posix" or array.size == 0 or _numpy_allocated(array):
        return True
    import ctypes

    low, high = byte_bounds(array)
    write = _libc_read()
    reading, writing = os.pipe()
    try:
        for address in {low, high - 1}:
            os.write(writing, ctypes.string_at(address, 1))
            if write(reading, ctypes.c_void_p(address), ctypes.c_size_t(1)) != 1:
                return False
    finally:
        os.close(reading)
        os.close(writing)
    return True


def _numpy_allocated(array: np.ndarray) -> bool:
    """Whether ``array``'s memory was allocated by numpy: it owns its data, or the array it is a view of does."""
    base = array
    while isinstance(base, np.ndarray) and not base.flags.owndata:
        base = base.base
    return isinstance(base, np.ndarray)


@functools.cache
def _libc_read():
    """libc's read(2), loaded once (ctypes builds a class per library handle)."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True).read


def reject_masked(array: np.ndarray, role: str) -> None:
    """MaskedValues if ``array`` is a masked array with a masked element: the check needs every value."""
    masked_arrays = sys.modules.get("numpy.ma")  # nobody has a masked array before numpy.ma is imported
    if masked_arrays is None or not isinstance(array, masked_arrays.MaskedArray):
        return
    mask = masked_arrays.getmaskarray(array)
    if mask.any():
        raise MaskedValues(role=role, coordinate=[int(i) for i in np.argwhere(mask)[0]])


def real_gradient(gradient, role: str = "analytic") -> np.ndarray:
    """``gradient`` if it is an array of a real dtype that float64 holds (bfloat16 included)."""
    if not isinstance(gradient, np.ndarray):
        raise InvalidArgument(argument=role, value=type(gradient).__name__, expected="a numpy array")
    real = gradient.dtype.kind in "fiu" and gradient.dtype.itemsize <= 8
    if not (real or gradient.dtype.name == "bfloat16"):
        raise UnsupportedDtype(role=role, dtype=str(gradient.dtype), expected="a real float64-representable dtype")
    reject_masked(gradient, role)
    return plain_view(gradient)


def parameter_and_gradient(parameters, gradient) -> tuple:
    """Validate one parameter array and its analytic gradient; return (ProbeDtype, gradient array).

    The parameters must be a writable float64, float32, float16 or bfloat16 array;
    the gradient a real array of the same shape (a scalar is accepted for a
    0-d parameter: ``np.cos(np.array(0.0))`` is one, and is returned as a
    0-d array).
    """
    dtype = writable_probe_dtype(parameters)
    if isinstance(gradient, (np.generic, float, int)) and not isinstance(gradient, bool):
        gradient = np.asarray(gradient)
    gradient = real_gradient(gradient)
    if parameters.shape != gradient.shape:
        raise GradientShapeMismatch(parameters=list(parameters.shape), analytic=list(gradient.shape))
    return dtype, gradient


def finite_point(parameters: np.ndarray, index: tuple) -> float:
    """θ = ``parameters[index]`` as a float; NonFinitePoint (not yet wrapped) if it is NaN or infinite."""
    point = float(parameters[index])
    if not math.isfinite(point):
        raise NonFinitePoint(point=point)
    return point


def plan_coordinates(
    parameters: np.ndarray,
    gradient: np.ndarray,
    samples,
    dtype: ProbeDtype,
    step: float | None = None,
    *,
    probes: bool = True,
) -> tuple:
    """Validate every selected coordinate before the first objective call, in selection order.

    At each coordinate, in the chapter's order: θ must be finite, its probes
    at the requested step must be valid in ``dtype``'s arithmetic
    (:func:`~gradcheck_cli.engine.dtypes.dtype_perturbations`), and the analytic
    value must be finite. The first failure is raised wrapped in
    :class:`AtCoordinate`.

    Parameters
    ----------
    parameters, gradient : np.ndarray, same shape
        Already validated by :func:`parameter_and_gradient`.
    samples : iterable of SampledCoordinate
    dtype : ProbeDtype
        The dtype of ``parameters``.
    step : float, optional
        A validated requested step h for every coordinate; None for the
        dtype's default ε^(1/3)·max(1, |θ|) per coordinate.
    probes : bool, default True
        False while the step is still to be chosen: θ and the analytic
        value are validated, and ``step`` and ``geometry`` are left None.

    Returns
    -------
    tuple of PlannedCoordinate
    """
    planned = []
    for sample in samples:
        index = sample.coordinate
        coordinate_step = geometry = None
        try:
            point = finite_point(parameters, index)
            if probes:
                coordinate_step = dtype.default_step(point) if step is None else step
                geometry = dtype_perturbations(point, coordinate_step, dtype)
            analytic_value = float(gradient[index])
            if not math.isfinite(analytic_value):
                raise NonFiniteAnalyticGradient(value=analytic_value)
        except GradCheckError as error:
            raise at_coordinate(index, error) from error
        planned.append(PlannedCoordinate(sample, point, analytic_value, coordinate_step, geometry))
    return tuple(planned)


def probing_objective(parameters: np.ndarray, index: tuple, objective: Callable) -> Callable[[float], float]:
    """A scalar function of one coordinate that writes the probe into ``parameters``.

    The exact original element is written back before the value is even
    looked at, whatever the objective does (returns, raises, is interrupted,
    makes the array read-only). The probe must be a value of the array's
    dtype, so writing it is exact. The element is read and written with
    ndarray's own indexing, so a subclass whose indexing returns a view
    cannot pass a view of the probe off as the original.
    """
    original = np.ndarray.__getitem__(parameters, index).copy()

    def evaluate(probe: float):
        try:
            np.ndarray.__setitem__(parameters, index, probe)
            value = objective(parameters)
        except BaseException:
            write_back(parameters, index, original)
            raise
        if not write_back(parameters, index, original):
            raise ReadOnlyArray(role="parameters", during_check=True)
        return value

    return evaluate


def write_back(array: np.ndarray, index, values) -> bool:
    """Write ``values`` into ``array[index]`` exactly; False if the array had been made read-only.

    An array the objective made read-only is made writable for the write
    (through its bases, as far as they were made read-only) and read-only
    again afterwards: its values are restored, its flags left as the
    objective set them.
    """
    try:
        np.ndarray.__setitem__(array, index, values)
        return True
    except ValueError:
        if array.flags.writeable:
            raise
    chain = [array]
    while isinstance(chain[-1].base, np.ndarray):
        chain.append(chain[-1].base)
    unlocked = []
    try:
        for each in reversed(chain):  # a view can be made writable only once its base is
            if not each.flags.writeable:
                each.flags.writeable = True
                unlocked.append(each)
        np.ndarray.__setitem__(array, index, values)
    finally:
        for each in unlocked:
            each.flags.writeable = False
    return False
