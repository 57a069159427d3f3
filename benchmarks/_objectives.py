"""The benchmarks' objective: the mean NLL as a user's numpy model computes it.

:func:`gradcheck_cli.chapter.nll.indexed_mean_nll` computes the same loss in the
chapter's arithmetic, libm ``exp``/``log`` and left-to-right sums, so that its
last bits are the same on every CPU; that costs a Python loop over every
logit (about 0.2 s for [64, 50257], some 30–40× the vectorized form). A user's
objective is vectorized, and a benchmark of the harness around it needs the
harness to be measured against realistic calls, so the benchmarks use this
form by default (``overhead.py --library-nll`` uses the library's).
"""

import numpy as np

__all__ = ["mean_nll", "mean_nll_gradient"]


def mean_nll(logits: np.ndarray, targets: np.ndarray) -> float:
    """Mean over rows of −log softmax(logits[r])[targets[r]], shifted by each row's max.

    Parameters
    ----------
    logits : np.ndarray, shape (rows, vocab), float64
    targets : np.ndarray of int, shape (rows,)
    """
    maximum = logits.max(axis=1)
    log_normalizer = np.log(np.exp(logits - maximum[:, None]).sum(axis=1))
    target_logits = logits[np.arange(logits.shape[0]), targets]
    return float((log_normalizer - (target_logits - maximum)).sum() / logits.shape[0])


def mean_nll_gradient(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """(softmax(logits) − one_hot(targets)) / rows, shape (rows, vocab)."""
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    gradient = weights / weights.sum(axis=1, keepdims=True)
    gradient[np.arange(logits.shape[0]), targets] -= 1.0
    gradient /= logits.shape[0]
    return gradient
