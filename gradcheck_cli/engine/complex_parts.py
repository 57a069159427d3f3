"""Complex parameters as their real and imaginary parts: each complex entry is two real coordinates.

A complex64 or complex128 array z of shape S is probed through its real view, the float32 or float64
array of shape S + (2,) over the same memory that ``torch.view_as_real`` makes (index 0 the real part,
1 the imaginary part): a probe written there is what the objective reads in z. Its gradient is
∂f/∂Re z + i ∂f/∂Im z (what torch's ``.grad`` holds for a real loss), whose real view holds the two
partial derivatives in the same places. The reasons and JAX's convention are in docs/method.md
("Complex numbers").
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

import numpy as np

from ..core.formatting import rust_list
from ..errors import GradientShapeMismatch, InvalidArgument, UnsupportedDtype
from .dtypes import COMPLEX_NAMES, unsupported_dtype

__all__ = [
    "COMPLEX_DTYPES",
    "PARTS",
    "is_complex_dtype",
    "real_view",
    "real_parts",
    "part_coordinates",
    "coordinate_text",
]

#: Each complex dtype checked, and the real dtype its parts are probed in.
COMPLEX_DTYPES = dict(zip(COMPLEX_NAMES, ("float64", "float32")))
#: The last index of a real view: 0 the real part, 1 the imaginary part.
PARTS = ("real", "imag")


def is_complex_dtype(dtype) -> bool:
    """Whether ``dtype`` (a numpy dtype or its name) is one of :data:`COMPLEX_DTYPES`."""
    if getattr(dtype, "kind", "c") != "c":  # numpy's dtype.name is slow to read: most dtypes are not complex
        return False
    return getattr(dtype, "name", dtype) in COMPLEX_DTYPES


def real_view(array):
    """``array`` itself, or, for a complex numpy array of shape S, its real view of shape S + (2,) over the
    same memory (a plain ndarray; read-only where ``array`` is)."""
    if not (isinstance(array, np.ndarray) and is_complex_dtype(array.dtype)):
        return array
    widened = np.ndarray.__getitem__(np.ndarray.view(array, np.ndarray), (Ellipsis, np.newaxis))
    return np.ndarray.view(widened, COMPLEX_DTYPES[array.dtype.name])


def real_parts(parameters, gradient) -> tuple:
    """``(parameters, gradient, complex dtype name or None)``: a complex parameter array as its real view
    and its gradient as the matching real array (a real gradient is one whose imaginary part is 0);
    anything else unchanged, for the real checks to validate."""
    if not (isinstance(parameters, np.ndarray) and parameters.dtype.kind == "c"):
        return parameters, gradient, None
    name = parameters.dtype.name
    if name not in COMPLEX_DTYPES:
        raise unsupported_dtype("parameters", name)
    if isinstance(gradient, (np.generic, complex, float, int)) and not isinstance(gradient, bool):
        gradient = np.asarray(gradient)
    if not isinstance(gradient, np.ndarray):
        raise InvalidArgument(argument="analytic", value=type(gradient).__name__, expected="a numpy array")
    if gradient.shape != parameters.shape:
        raise GradientShapeMismatch(parameters=list(parameters.shape), analytic=list(gradient.shape))
    if gradient.dtype.kind == "c":
        return real_view(parameters), np.stack([gradient.real, gradient.imag], axis=-1).astype(np.float64), name
    if gradient.dtype.kind not in "fiu" and gradient.dtype.name != "bfloat16":
        raise UnsupportedDtype(role="analytic", dtype=gradient.dtype.name, expected="a complex or real dtype")
    real = np.asarray(gradient, dtype=np.float64)
    return real_view(parameters), np.stack([real, np.zeros_like(real)], axis=-1), name


def part_coordinates(listed, shape: tuple):
    """Explicit coordinates of a complex parameter whose real view has ``shape``: an index of the complex
    array (one shorter) stands for both its parts; an index of the real view is one part. Anything else
    is left for the real checks to refuse."""
    if isinstance(listed, (str, bytes)) or not isinstance(listed, Iterable):
        return listed
    expanded = []
    for item in listed:
        index = _complex_index(item, len(shape) - 1)
        expanded += [item] if index is None else [(*index, part) for part in range(len(PARTS))]
    return expanded


def _complex_index(item, rank: int) -> tuple | None:
    """``item`` as an index tuple of the complex array's ``rank`` axes, or None when it is not one."""
    try:
        if isinstance(item, bool):
            return None
        if rank == 1 and not isinstance(item, (tuple, list, np.ndarray)):
            return (operator.index(item),)
        if isinstance(item, (tuple, list, np.ndarray)) and len(item) == rank:
            return tuple(operator.index(position) for position in item)
    except TypeError:
        return None
    return None


def coordinate_text(coordinate, dtype: str) -> str:
    """``[0, 1]``, or for a complex parameter's part ``[0, 1].real`` (``.imag``): the index of the complex
    entry, then the part."""
    if is_complex_dtype(dtype) and len(coordinate) >= 1:
        return f"{rust_list(coordinate[:-1])}.{PARTS[coordinate[-1]]}"
    return rust_list(coordinate)


def real_problem(problem):
    """``problem`` (a GradientProblem) with each complex parameter as its real view and its gradient as
    the real one (:func:`real_parts`); the objective is still called with the problem's own mapping, whose
    complex arrays the views write into. A problem without complex parameters is returned as it is."""
    from .problem import GradientProblem

    parameters, gradients, changed = dict(problem.parameters), dict(problem.gradients), False
    for name, array in problem.parameters.items():
        if isinstance(array, np.ndarray) and array.dtype.kind == "c" and name in gradients:
            parameters[name], gradients[name], _ = real_parts(array, gradients[name])
            changed = True
    if not changed:
        return problem
    given, objective = problem.parameters, problem.objective
    return GradientProblem(lambda _views: objective(given), parameters, gradients)
