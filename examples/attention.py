"""One causal self-attention head with layer norm and a hand-written backward pass (float64).

    Y = γ ⊙ (X − mean X) / sqrt(var X + 1e-5) + β          (layer norm, per row)
    Q, K, V = Y Wq, Y Wk, Y Wv
    S = Q Kᵀ / sqrt(d), masked above the diagonal (causal)
    A = softmax(S) per row,  Z = (A V) Wo
    loss = ‖Z − target‖² / (2T)

``problem`` returns the correct gradients of all seven parameters (the
inputs X included, so layer norm's backward is checked too).
``wrong_problem`` has a bug that keeps every shape right: the key gradient
uses the attention-score gradient untransposed, dK = dS Q / sqrt(d) instead
of dSᵀ Q / sqrt(d). Wk fails, and so does everything that receives dK on
its way back through layer norm (γ, β, X); Wq, Wv and Wo still pass.

    python examples/attention.py
    gradcheck check examples/attention.py:problem         # exit 0
    gradcheck check examples/attention.py:wrong_problem   # exit 1
"""

import sys

import numpy as np
from mlp import main as check_and_print

from gradcheck_cli import GradientProblem

TOKENS, WIDTH, HEAD = 5, 6, 4
LAYER_NORM_EPSILON = 1e-5


def make_head(seed=1):
    """Parameters (inputs included) and a regression target, float64, fixed seed."""
    rng = np.random.default_rng(seed)
    parameters = {
        "X": rng.normal(size=(TOKENS, WIDTH)),
        "gamma": 1.0 + 0.1 * rng.normal(size=WIDTH),
        "beta": 0.1 * rng.normal(size=WIDTH),
        "Wq": rng.normal(size=(WIDTH, HEAD)) / np.sqrt(WIDTH),
        "Wk": rng.normal(size=(WIDTH, HEAD)) / np.sqrt(WIDTH),
        "Wv": rng.normal(size=(WIDTH, HEAD)) / np.sqrt(WIDTH),
        "Wo": rng.normal(size=(HEAD, WIDTH)) / np.sqrt(HEAD),
    }
    target = rng.normal(size=(TOKENS, WIDTH))
    return parameters, target


def forward(p, target):
    """The loss and every intermediate the backward pass needs."""
    x = p["X"]
    centered = x - x.mean(axis=1, keepdims=True)
    inverse_std = 1.0 / np.sqrt((centered**2).mean(axis=1, keepdims=True) + LAYER_NORM_EPSILON)
    normalized = centered * inverse_std
    y = p["gamma"] * normalized + p["beta"]
    q, k, v = y @ p["Wq"], y @ p["Wk"], y @ p["Wv"]
    scores = (q @ k.T) / np.sqrt(HEAD)
    future = np.triu(np.ones((TOKENS, TOKENS), dtype=bool), k=1)
    scores = np.where(future, -np.inf, scores)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    attention = weights / weights.sum(axis=1, keepdims=True)
    heads = attention @ v
    z = heads @ p["Wo"]
    loss = ((z - target) ** 2).sum() / (2 * TOKENS)
    cache = dict(y=y, q=q, k=k, v=v, attention=attention, heads=heads, z=z)
    cache.update(normalized=normalized, inverse_std=inverse_std)
    return loss, cache


def backward(p, target, untransposed_key_gradient=False):
    """The hand-derived gradient of the loss for every parameter."""
    _, c = forward(p, target)
    d_z = (c["z"] - target) / TOKENS
    d_wo = c["heads"].T @ d_z
    d_heads = d_z @ p["Wo"].T
    d_attention = d_heads @ c["v"].T
    d_v = c["attention"].T @ d_heads
    # Softmax backward per row; masked entries have attention 0, so their score gradient is 0.
    d_scores = c["attention"] * (d_attention - (d_attention * c["attention"]).sum(axis=1, keepdims=True))
    d_q = d_scores @ c["k"] / np.sqrt(HEAD)
    if untransposed_key_gradient:
        d_k = d_scores @ c["q"] / np.sqrt(HEAD)  # the bug: dS where dSᵀ belongs (square, so it runs)
    else:
        d_k = d_scores.T @ c["q"] / np.sqrt(HEAD)
    y = c["y"]
    d_y = d_q @ p["Wq"].T + d_k @ p["Wk"].T + d_v @ p["Wv"].T
    normalized = c["normalized"]
    d_normalized = d_y * p["gamma"]
    d_x = c["inverse_std"] * (
        d_normalized
        - d_normalized.mean(axis=1, keepdims=True)
        - normalized * (d_normalized * normalized).mean(axis=1, keepdims=True)
    )
    return {
        "X": d_x,
        "gamma": (d_y * normalized).sum(axis=0),
        "beta": d_y.sum(axis=0),
        "Wq": y.T @ d_q,
        "Wk": y.T @ d_k,
        "Wv": y.T @ d_v,
        "Wo": d_wo,
    }


def build(untransposed_key_gradient=False) -> GradientProblem:
    parameters, target = make_head()

    def objective(current):
        return float(forward(current, target)[0])

    return GradientProblem(objective, parameters, backward(parameters, target, untransposed_key_gradient))


def problem() -> GradientProblem:
    """The correct attention head: every sampled coordinate passes."""
    return build()


def wrong_problem() -> GradientProblem:
    """dK uses dS untransposed: Wk fails (and γ, β, X, which receive dK through layer norm)."""
    return build(untransposed_key_gradient=True)


if __name__ == "__main__":
    sys.exit(check_and_print((("problem", problem), ("wrong_problem", wrong_problem))))
