"""More real, publicly reported numpy backward-pass mistakes, each rebuilt small (issue 32): RMS
norms whose weight or whose gradient is lost, and a summed cross-entropy divided by its batch.

Every builder returns ``(objective, parameters, gradients)`` as in ``_realbugs_numpy.py``; each is
our own minimal reconstruction of the mistake named in ``mistake``, not the reporter's code.
"""

from __future__ import annotations

import numpy as np

from _realbugs_case import RealBug, cast, float64


def _total(values) -> float:
    return float(np.sum(values, dtype=np.float64))


def _rms_problem(dtype, rng):
    """y = x·r·w over the last axis, r = (mean(x²) + ε)^(-1/2); the objective Σ u·y."""
    params = cast(dtype, x=rng.normal(size=(4, 6)), w=1 + 0.3 * rng.normal(size=6))
    u = rng.normal(size=(4, 6))

    def objective(p):
        x = p["x"].astype(np.float64)
        r = 1 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6)
        return _total(u * x * r * p["w"].astype(np.float64))

    return objective, params, u


def _rms_backward(p, u, weight_in_dx=True):
    x, w = p["x"], p["w"]
    r = 1 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6)
    weight = w if weight_in_dx else np.ones_like(w)
    s = np.sum(u * x * weight, axis=1, keepdims=True)
    dx = u * weight * r - r**3 * x * s / x.shape[1]
    return {"x": dx, "w": np.sum(u * x * r, axis=0)}


def rmsnorm_backward_without_weight(dtype, rng, buggy):
    objective, params, u = _rms_problem(dtype, rng)
    return objective, params, _rms_backward(float64(params), u, weight_in_dx=not buggy)


def rmsnorm_weight_gradient_never_computed(dtype, rng, buggy):
    objective, params, u = _rms_problem(dtype, rng)
    grads = _rms_backward(float64(params), u)
    if buggy:  # the kernel's second pass never accumulates the weight's gradient
        grads["w"] = np.zeros_like(grads["w"])
    return objective, params, grads


def rmsnorm_fast_path_without_backward(dtype, rng, buggy):
    objective, params, u = _rms_problem(dtype, rng)
    grads = _rms_backward(float64(params), u)
    if buggy:  # the contiguous fast path records no backward: nothing flows to x or the weight
        grads = {name: np.zeros_like(value) for name, value in grads.items()}
    return objective, params, grads


def summed_cross_entropy_divided_by_batch(dtype, rng, buggy):
    batch, classes = 4, 5
    inputs, targets = rng.normal(size=(batch, 3)), rng.integers(0, classes, size=batch)
    params = cast(dtype, W=rng.normal(size=(3, classes)), b=0.1 * rng.normal(size=classes))

    def objective(p):
        logits = inputs @ p["W"].astype(np.float64) + p["b"].astype(np.float64)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        return -_total(log_softmax[np.arange(batch), targets])  # reduction="sum"

    p = float64(params)
    logits = inputs @ p["W"] + p["b"]
    softmax = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax /= softmax.sum(axis=1, keepdims=True)
    softmax[np.arange(batch), targets] -= 1
    dlogits = softmax / batch if buggy else softmax  # the mean's 1/batch whatever the reduction
    return objective, params, {"W": inputs.T @ dlogits, "b": dlogits.sum(axis=0)}


CASES = [
    RealBug(
        "rmsnorm_backward_without_weight",
        "numpy",
        "https://github.com/karpathy/llm.c/pull/763 (review comment: a bug found in an RMSNorm)",
        "RMSNorm backward forgot to multiply by the weight: dx from g·r and Σ g·x where g·w belongs",
        ("x",),
        (),
        rmsnorm_backward_without_weight,
    ),
    RealBug(
        "rmsnorm_weight_gradient_never_computed",
        "numpy",
        "https://github.com/paiml/entrenar/pull/257",
        "RMSNorm backward never computed grad_gamma: the norm's weights get zero gradient",
        ("w",),
        ("zero",),
        rmsnorm_weight_gradient_never_computed,
        factor=0.0,
    ),
    RealBug(
        "rmsnorm_fast_path_without_backward",
        "numpy",
        "https://github.com/huggingface/candle/issues/2168",
        "RmsNorm's contiguous fast path has no backward: no gradient reaches the input or the weight",
        ("x", "w"),
        ("zero",),
        rmsnorm_fast_path_without_backward,
        factor=0.0,
    ),
    RealBug(
        "summed_cross_entropy_divided_by_batch",
        "numpy",
        "https://github.com/paiml/aprender/pull/2182",
        "CrossEntropyLoss backward divides by the batch size whatever the reduction: reduction='sum' gets 1/batch",
        ("W", "b"),
        ("scale",),
        summed_cross_entropy_divided_by_batch,
        factor=0.25,
    ),
]
