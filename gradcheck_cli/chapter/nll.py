"""The chapter's NLL fixture: indexed mean NLL and a separate hand-derived gradient.

The two paths are materially separate: :func:`indexed_mean_nll` is the
production objective the numerical side perturbs, and
:func:`hand_derived_nll_gradient` is the analytic candidate with its own
row maximum, exponential sum, normalization, target subtraction and batch
scaling. They share no helper; both still share the inputs, IEEE f64
arithmetic and libm's exponential, numpy storage, and row-major indexing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.record import Record
from ..engine.estimator import validate_step, validate_tolerance
from ..engine.sampling import sample_tensor_coordinates, validate_samples
from ..engine.tensors import parameter_and_gradient
from ..errors import InvalidLogits, InvalidTargets
from .fixtures import LOGIT_SHAPE, LOGIT_VALUES, TARGETS, TENSOR_SAMPLES, TENSOR_STEP, TENSOR_TOLERANCE
from .sampled import TensorGradientCheck, sampled_tensor_gradient_check

__all__ = [
    "LOGIT_SHAPE",
    "LOGIT_VALUES",
    "TARGETS",
    "TENSOR_STEP",
    "TENSOR_TOLERANCE",
    "TENSOR_SAMPLES",
    "InvalidLogits",
    "InvalidTargets",
    "chapter_logits",
    "indexed_mean_nll",
    "hand_derived_nll_gradient",
    "NllGradientExample",
    "nll_options",
    "nll_gradient_check",
]


#: Results list the logit values themselves only up to this many.
LISTED_VALUES = 1024

ANALYTIC_PATH = "local-row-max-exp-sum-normalize-target-gradient"


def chapter_logits() -> np.ndarray:
    """A fresh writable copy of the chapter's [2, 3] logits."""
    return np.array(LOGIT_VALUES, dtype=np.float64).reshape(LOGIT_SHAPE)


def validate_nll_inputs(logits, targets: Sequence[int]) -> tuple:
    """Check logits and targets for the NLL fixture; return targets as an int array."""
    if not isinstance(logits, np.ndarray) or logits.ndim != 2 or 0 in logits.shape:
        shape = list(getattr(logits, "shape", ()))
        raise InvalidLogits(problem=f"must be a nonempty [rows, vocab] array, got shape {shape}")
    if logits.dtype != np.float64:
        raise InvalidLogits(problem=f"must be float64, got {logits.dtype}")
    if not np.isfinite(logits).all():
        row, column = np.argwhere(~np.isfinite(logits))[0]
        raise InvalidLogits(problem=f"value at [{row}, {column}] is not finite")
    rows, vocab = logits.shape
    targets = list(targets)
    if len(targets) != rows:
        raise InvalidTargets(problem=f"need one class per row: {rows} rows, got {len(targets)} targets")
    for row, target in enumerate(targets):
        if isinstance(target, bool) or not isinstance(target, (int, np.integer)) or not 0 <= target < vocab:
            raise InvalidTargets(problem=f"row {row} target {target} is not a class in 0..{vocab - 1}")
    return np.asarray(targets, dtype=np.intp)


def indexed_mean_nll(logits: np.ndarray, targets: np.ndarray) -> float:
    """Mean over rows of −log softmax(logits[r])[targets[r]], shifted by each row's max.

    The chapter's f64 arithmetic, operation for operation: libm's ``exp``
    and ``log`` (what Rust's ``f64::exp`` and ``f64::ln`` call) and sums
    taken left to right. numpy's vectorized ``exp`` is not libm's on every
    CPU, and ``np.sum`` adds pairwise, so either would change the last bits
    of the loss, and hence the 11th digit of a numerical derivative, from
    one machine to another. The price is speed: about 0.25 s for [64, 50257].

    Parameters
    ----------
    logits : np.ndarray, shape (rows, vocab), float64, finite
    targets : np.ndarray of int, shape (rows,)
    """
    total = 0.0
    for row, target in zip(logits.tolist(), targets.tolist()):
        maximum = max(row)
        normalizer = 0.0
        for weight in map(math.exp, [logit - maximum for logit in row]):
            normalizer += weight
        total += math.log(normalizer) - (row[target] - maximum)
    return total / logits.shape[0]


def hand_derived_nll_gradient(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """(normalized probabilities − one_hot(target)) / rows, through a separate local path.

    The chapter's own routine, step for step: each row's maximum, libm
    ``exp`` of the shifted logits, their left-to-right sum, division by it,
    one subtracted at the target, and every value divided by the row count.

    Returns
    -------
    np.ndarray, shape (rows, vocab), float64
    """
    rows = logits.shape[0]
    gradient = np.empty(logits.shape, dtype=np.float64)
    for row, (values, target) in enumerate(zip(logits.tolist(), targets.tolist())):
        largest = max(values)
        weights = [math.exp(value - largest) for value in values]
        normalizer = 0.0
        for weight in weights:
            normalizer += weight
        probabilities = [weight / normalizer for weight in weights]
        probabilities[target] -= 1.0
        gradient[row] = probabilities
    gradient /= float(rows)
    return gradient


@dataclass(frozen=True)
class NllGradientExample(Record):
    """The NLL fixture's inputs, loss, sampled check, and restoration evidence."""

    json_keys = {"logits": "values"}  # as the chapter's line prints them: nll logits: shape=... values=...

    shape: tuple
    logits: tuple  # every value when there are at most LISTED_VALUES of them, else None
    targets: tuple
    loss: float
    analytic_path: str
    check: TensorGradientCheck
    restored_exactly: bool


def nll_options(step: float, tolerance: float, samples: int) -> tuple:
    """(step, tolerance, samples) validated as :func:`nll_gradient_check` validates them first: the
    command line has them refused before it reads an input file (a 10⁷-element file takes seconds)."""
    return validate_step(step), validate_tolerance(tolerance), validate_samples(samples)


def nll_gradient_check(
    logits: np.ndarray = None,
    targets: Sequence[int] = TARGETS,
    analytic: np.ndarray = None,
    step: float = TENSOR_STEP,
    tolerance: float = TENSOR_TOLERANCE,
    samples: int = TENSOR_SAMPLES,
) -> NllGradientExample:
    """Check sampled vocabulary-logit coordinates of indexed mean NLL.

    By default the chapter's fixture; any [rows, vocab] logits and targets
    otherwise. ``analytic`` defaults to :func:`hand_derived_nll_gradient`; a
    user's own backward output checks their softmax-cross-entropy gradient.
    """
    # The whole request is validated before the loss or a gradient is computed: on a 10⁷-element
    # file those take seconds and hundreds of MB.
    step, tolerance, samples = nll_options(step, tolerance, samples)
    logits = chapter_logits() if logits is None else logits
    target_array = validate_nll_inputs(logits, targets)
    if analytic is not None:
        _, analytic = parameter_and_gradient(logits, analytic)
    sample_tensor_coordinates(logits.shape, samples)
    path = "user-supplied" if analytic is not None else ANALYTIC_PATH
    if analytic is None:
        analytic = hand_derived_nll_gradient(logits, target_array)
    loss = indexed_mean_nll(logits, target_array)
    original_bits = logits.tobytes()
    check = sampled_tensor_gradient_check(
        logits, analytic, step, tolerance, samples, lambda candidate: indexed_mean_nll(candidate, target_array)
    )
    return NllGradientExample(
        shape=tuple(logits.shape),
        logits=tuple(logits.ravel().tolist()) if logits.size <= LISTED_VALUES else None,
        targets=tuple(int(target) for target in target_array),
        loss=loss,
        analytic_path=path,
        check=check,
        restored_exactly=logits.tobytes() == original_bits,
    )
