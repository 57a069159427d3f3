"""Real, publicly reported mistakes in hand-written numpy backward passes, each rebuilt small.

Every builder returns ``(objective, parameters, gradients)`` for check_gradients: the objective
reads the parameters (and the data, both in the case's dtype) and returns a float; the gradients
are the backward pass as reported (``buggy=True``) or as fixed, computed in float64. Each is our
own minimal reconstruction of the mistake named in ``mistake``, not the reporter's code.
"""

from __future__ import annotations

import math

import numpy as np

from _realbugs_case import RealBug, cast, float64


def _softmax(scores):
    shifted = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def _sigmoid(values):
    return 1 / (1 + np.exp(-values))


def _total(values) -> float:
    return float(np.sum(values, dtype=np.float64))


def cbow_repeated_context(dtype, rng, buggy):
    vocabulary, width = 10, 4
    windows = np.array([[3, 1, 3, 7], [2, 5, 8, 0]])  # the first window holds word 3 twice
    targets = np.array([4, 6])
    params = cast(dtype, W_in=rng.normal(size=(vocabulary, width)), W_out=rng.normal(size=(vocabulary, width)) * 0.5)

    def scores(p):
        hidden = p["W_in"][windows].mean(axis=1)
        return hidden, hidden @ p["W_out"].T

    def objective(p):
        _, s = scores(p)
        log_probabilities = s - s.max(axis=1, keepdims=True)
        log_probabilities -= np.log(np.exp(log_probabilities).sum(axis=1, keepdims=True))
        return -_total(log_probabilities[np.arange(2), targets])

    p = float64(params)
    hidden, s = scores(p)
    dscores = _softmax(s)
    dscores[np.arange(2), targets] -= 1
    dhidden = dscores @ p["W_out"]
    d_in = np.zeros_like(p["W_in"])
    for window, share in zip(windows, dhidden / windows.shape[1]):
        if buggy:
            d_in[window] += share  # fancy-index += adds a repeated row once
        else:
            np.add.at(d_in, window, share)
    return objective, params, {"W_in": d_in, "W_out": dscores.T @ hidden}


def _rnn(dtype, rng, mistake):
    steps, batch, inputs, hidden = 4, 3, 3, 4
    data = cast(
        dtype,
        x=rng.normal(size=(steps, batch, inputs)),
        h0=0.5 * rng.normal(size=(batch, hidden)),
        u=rng.normal(size=(steps, batch, hidden)),
    )
    params = cast(
        dtype,
        Wx=rng.normal(size=(inputs, hidden)) / math.sqrt(inputs),
        Wh=rng.normal(size=(hidden, hidden)) / math.sqrt(hidden),
        b=0.1 * rng.normal(size=hidden),
    )

    def states(p, d):
        h, found = d["h0"], []
        for t in range(steps):
            h = np.tanh(d["x"][t] @ p["Wx"] + h @ p["Wh"] + p["b"])
            found.append(h)
        return found

    def objective(p):
        return sum(_total(u * h) for u, h in zip(data["u"], states(p, data)))

    p, d = float64(params), float64(data)
    hs = states(p, d)
    grads = {name: np.zeros_like(value) for name, value in p.items()}
    da_prev = np.zeros_like(d["h0"])
    for t in reversed(range(steps)):
        da = {"upstream never injected": da_prev, "no backprop through time": d["u"][t]}.get(
            mistake, d["u"][t] + da_prev
        )
        dpre = da * (1 - hs[t] ** 2)
        grads["Wx"] += d["x"][t].T @ dpre
        grads["Wh"] += (hs[t - 1] if t else d["h0"]).T @ dpre
        grads["b"] += dpre.sum(axis=0)
        da_prev = dpre @ p["Wh"].T
    return objective, params, grads


def rnn_upstream_never_injected(dtype, rng, buggy):
    return _rnn(dtype, rng, "upstream never injected" if buggy else None)


def rnn_no_backprop_through_time(dtype, rng, buggy):
    return _rnn(dtype, rng, "no backprop through time" if buggy else None)


class _Value:
    """stores a single scalar and its gradient (micrograd's engine, the two operations used here)"""

    def __init__(self, data, children=()):
        self.data, self.grad, self._prev, self._backward = data, 0.0, children, lambda: None

    def __mul__(self, other):
        out = _Value(self.data * other.data, (self, other))

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def exp(self, assign=False):
        out = _Value(math.exp(self.data), (self,))

        def _backward():
            if assign:
                self.grad = out.data * out.grad  # = where += belongs: drops the other uses of self
            else:
                self.grad += out.data * out.grad

        out._backward = _backward
        return out

    def backward(self):
        order, seen = [], set()

        def visit(value):
            if value not in seen:
                seen.add(value)
                for child in value._prev:
                    visit(child)
                order.append(value)

        visit(self)
        self.grad = 1.0
        for value in reversed(order):
            value._backward()


def micrograd_assign_in_backward(dtype, rng, buggy):
    size = 6
    data = cast(dtype, x=rng.uniform(0.3, 1.0, size=size), c=rng.normal(size=size))
    params = cast(dtype, w=rng.uniform(-1.2, 1.2, size=size))

    def objective(p):
        a = p["w"] * data["x"]
        return _total(data["c"] * np.exp(a) * a)

    grad = np.zeros(size)
    for k, (w, x, c) in enumerate(zip(*(np.asarray(v, dtype=np.float64) for v in (params["w"], data["x"], data["c"])))):
        leaf = _Value(float(w))
        a = leaf * _Value(float(x))
        loss = _Value(float(c)) * (a.exp(assign=buggy) * a)
        loss.backward()
        grad[k] = leaf.grad
    return objective, params, {"w": grad}


def softmax_jacobian_uses_input(dtype, rng, buggy):
    data = cast(dtype, x=rng.normal(size=(6, 4)), u=rng.normal(size=(6, 5)))
    params = cast(dtype, W=0.5 * rng.normal(size=(4, 5)))

    def objective(p):
        return _total(data["u"] * _softmax(data["x"] @ p["W"]))

    p, d = float64(params), float64(data)
    z = d["x"] @ p["W"]
    s = _softmax(z)
    weighted = np.sum(d["u"] * s, axis=1, keepdims=True)
    dz = d["u"] * s - (z if buggy else s) * weighted  # the Jacobian written with the input z for the output s
    return objective, params, {"W": d["x"].T @ dz}


def maxpool_return_inside_loop(dtype, rng, buggy):
    height, width, channels, size = 6, 6, 2, 2
    data = cast(dtype, u=rng.normal(size=(height // size, width // size, channels)))
    params = cast(dtype, x=rng.normal(size=(height, width, channels)))

    def pooled(x):
        return x.reshape(height // size, size, width // size, size, channels).max(axis=(1, 3))

    def objective(p):
        return _total(data["u"] * pooled(p["x"]))

    def backward(x, u):
        dx = np.zeros_like(x)
        for h in range(height // size):
            for w in range(width // size):
                patch = x[h * size : (h + 1) * size, w * size : (w + 1) * size]
                best = patch.max(axis=(0, 1))
                for i in range(size):
                    for j in range(size):
                        for k in range(channels):
                            if patch[i, j, k] == best[k]:
                                dx[h * size + i, w * size + j, k] = u[h, w, k]
                if buggy:
                    return dx  # the return indented into the patch loop: one window only
        return dx

    return objective, params, {"x": backward(float64(params)["x"], float64(data)["u"])}


def _two_layer(dtype, rng):
    data = cast(dtype, x=rng.normal(size=(8, 3)), y=rng.uniform(0.1, 0.9, size=(8, 2)))
    params = cast(
        dtype,
        W1=rng.normal(size=(3, 4)),
        b1=0.1 * rng.normal(size=4),
        W2=rng.normal(size=(4, 2)),
        b2=0.1 * rng.normal(size=2),
    )

    def forward(p, d):
        hidden = _sigmoid(d["x"] @ p["W1"] + p["b1"])
        return hidden, _sigmoid(hidden @ p["W2"] + p["b2"])

    def objective(p):
        return 0.5 * _total((forward(p, data)[1] - data["y"]) ** 2)

    return data, params, forward, objective


def output_layer_missing_sigmoid_derivative(dtype, rng, buggy):
    data, params, forward, objective = _two_layer(dtype, rng)
    p, d = float64(params), float64(data)
    hidden, out = forward(p, d)
    delta_out = (out - d["y"]) * (1.0 if buggy else out * (1 - out))
    delta_hidden = delta_out @ p["W2"].T * hidden * (1 - hidden)
    grads = {"W1": d["x"].T @ delta_hidden, "b1": delta_hidden.sum(0), "W2": hidden.T @ delta_out}
    return objective, params, {**grads, "b2": delta_out.sum(0)}


def hidden_delta_after_weight_update(dtype, rng, buggy):
    data, params, forward, objective = _two_layer(dtype, rng)
    p, d = float64(params), float64(data)
    hidden, out = forward(p, d)
    delta_out = (out - d["y"]) * out * (1 - out)
    grad_w2 = hidden.T @ delta_out
    learning_rate = 0.1
    w2 = p["W2"] - learning_rate * grad_w2 if buggy else p["W2"]  # the output layer already stepped
    delta_hidden = delta_out @ w2.T * hidden * (1 - hidden)
    grads = {"W1": d["x"].T @ delta_hidden, "b1": delta_hidden.sum(0), "W2": grad_w2}
    return objective, params, {**grads, "b2": delta_out.sum(0)}


def sigmoid_backward_on_input(dtype, rng, buggy):
    data = cast(dtype, x=rng.normal(size=(6, 4)), u=rng.normal(size=(6, 3)))
    params = cast(dtype, W=0.7 * rng.normal(size=(4, 3)), b=0.2 * rng.normal(size=3))

    def objective(p):
        return _total(data["u"] * _sigmoid(data["x"] @ p["W"] + p["b"]))

    p, d = float64(params), float64(data)
    z = d["x"] @ p["W"] + p["b"]
    y = z if buggy else _sigmoid(z)  # self.x * (1 - self.x) with self.x the input
    dz = d["u"] * y * (1 - y)
    return objective, params, {"W": d["x"].T @ dz, "b": dz.sum(0)}


def softmax_squared_error_factor_two(dtype, rng, buggy):
    data = cast(dtype, x=rng.normal(size=(6, 4)), y=_softmax(rng.normal(size=(6, 5))))
    params = cast(dtype, W=0.5 * rng.normal(size=(4, 5)))

    def objective(p):
        return 0.5 * _total((_softmax(data["x"] @ p["W"]) - data["y"]) ** 2)

    p, d = float64(params), float64(data)
    s = _softmax(d["x"] @ p["W"])
    ds = (2.0 if buggy else 1.0) * (s - d["y"])
    dz = s * (ds - np.sum(ds * s, axis=1, keepdims=True))
    return objective, params, {"W": d["x"].T @ dz}


def softmax_loss_normalized_by_numel(dtype, rng, buggy):
    batch, classes = 6, 5
    data = cast(dtype, x=rng.normal(size=(batch, 4)))
    labels = rng.integers(0, classes, size=batch)
    params = cast(dtype, W=0.5 * rng.normal(size=(4, classes)), b=0.1 * rng.normal(size=classes))

    def objective(p):
        s = data["x"] @ p["W"] + p["b"]
        s = s - s.max(axis=1, keepdims=True)
        log_probabilities = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
        return -_total(log_probabilities[np.arange(batch), labels]) / batch

    p, d = float64(params), float64(data)
    dscores = _softmax(d["x"] @ p["W"] + p["b"])
    dscores[np.arange(batch), labels] -= 1
    dscores /= batch * classes if buggy else batch  # numel(x) where size(x, batch axis) belongs
    return objective, params, {"W": d["x"].T @ dscores, "b": dscores.sum(0)}


def inverse_backward_transpose_is_noop(dtype, rng, buggy):
    data = cast(dtype, u=rng.normal(size=(4, 4)))
    params = cast(dtype, A=2 * np.eye(4) + 0.4 * rng.normal(size=(4, 4)))

    def objective(p):
        return _total(data["u"] * np.linalg.inv(p["A"]))

    result = np.linalg.inv(float64(params)["A"])
    # ndarray.transpose(-2, -1) permutes the axes (0, 1): a no-op on a matrix, unlike torch's
    transposed = result.transpose(-2, -1) if buggy else result.T
    return objective, params, {"A": -(transposed @ (float64(data)["u"] @ transposed))}


def pow_backward_exponent_twice(dtype, rng, buggy):
    data = cast(dtype, u=rng.normal(size=4))
    params = cast(dtype, x=rng.normal(size=(3, 4)))

    def objective(p):
        return _total(data["u"] * (p["x"] ** 2).sum(axis=0))

    derivative = 2 * float64(params)["x"] * float64(data)["u"]
    return objective, params, {"x": 2 * derivative if buggy else derivative}


def conv1d_weight_gradient_reversed(dtype, rng, buggy):
    batch, length, filters, width = 4, 12, 3, 5
    steps = length - width + 1
    data = cast(dtype, x=rng.normal(size=(batch, length)), u=rng.normal(size=(batch, filters, steps)))
    params = cast(dtype, w=0.5 * rng.normal(size=(filters, width)), b=0.1 * rng.normal(size=filters))
    windows = np.stack([np.arange(t, t + width) for t in range(steps)])

    def objective(p):
        out = np.einsum("fk,ntk->nft", p["w"], data["x"][:, windows]) + p["b"][None, :, None]
        return _total(data["u"] * out)

    d = float64(data)
    dw = np.einsum("nft,ntk->fk", d["u"], d["x"][:, windows])
    return objective, params, {"w": dw[:, ::-1] if buggy else dw, "b": d["u"].sum(axis=(0, 2))}


def matmul_backward_uses_output(dtype, rng, buggy):
    data = cast(dtype, u=rng.normal(size=(4, 5)))
    params = cast(dtype, A=rng.normal(size=(4, 3)), B=rng.normal(size=(3, 5)))

    def objective(p):
        return _total(data["u"] * (p["A"] @ p["B"]))

    p = float64(params)
    upstream = p["A"] @ p["B"] if buggy else float64(data)["u"]  # out where out.grad belongs
    return objective, params, {"A": upstream @ p["B"].T, "B": p["A"].T @ upstream}


def _layernorm(dtype, rng, shape):
    """Layer norm over the last axis: (objective, parameters, right gradients, xhat, rstd, dxhat, u)."""
    features = shape[-1]
    data = cast(dtype, u=rng.normal(size=shape))
    params = cast(
        dtype,
        x=rng.normal(size=shape) * 1.5 + 0.5,
        gamma=1 + 0.2 * rng.normal(size=features),
        beta=0.3 * rng.normal(size=features),
    )

    def normalized(x):
        mean, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5), 1 / np.sqrt(var + 1e-5)

    def objective(p):
        return _total(data["u"] * (p["gamma"] * normalized(p["x"])[0] + p["beta"]))

    p, u = float64(params), float64(data)["u"]
    xhat, rstd = normalized(p["x"])
    dxhat = u * p["gamma"]
    axes = tuple(range(len(shape) - 1))
    grads = {
        "x": _layernorm_dx(dxhat, xhat, rstd, -1),
        "gamma": (u * xhat).sum(axis=axes),
        "beta": u.sum(axis=axes),
    }
    return objective, params, grads, xhat, rstd, dxhat, u


def _layernorm_dx(dxhat, xhat, rstd, axes, mean_weight=1):
    mean = dxhat.mean(axis=axes, keepdims=True)
    return rstd * (dxhat - mean_weight * mean - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True))


def layernorm_mean_subtracted_twice(dtype, rng, buggy):
    objective, params, grads, xhat, rstd, dxhat, _ = _layernorm(dtype, rng, (6, 5))
    if buggy:  # the register still held mean(dy·γ) when the next product accumulated into it
        grads["x"] = _layernorm_dx(dxhat, xhat, rstd, -1, mean_weight=2)
    return objective, params, grads


def layernorm_rank3_backward_as_2d(dtype, rng, buggy):
    objective, params, grads, xhat, rstd, dxhat, _ = _layernorm(dtype, rng, (2, 3, 4))
    if buggy:  # rows = input.shape[0]: each batch entry reduced as one row of T·D elements
        grads["x"] = _layernorm_dx(dxhat, xhat, rstd, (1, 2))
    return objective, params, grads


def invertible_layernorm_gamma_wrong_index(dtype, rng, buggy):
    objective, params, grads, xhat, _, _, u = _layernorm(dtype, rng, (6, 5))
    if buggy:  # xhat recovered from the output with gamma and beta read at another feature's index
        p = float64(params)
        recovered = (p["gamma"] * xhat + p["beta"] - np.roll(p["beta"], 1)) / np.roll(p["gamma"], 1)
        grads["gamma"] = (u * recovered).sum(axis=0)
    return objective, params, grads


GATES = ("i", "f", "o", "g")


def _lstm(dtype, rng, mistake):
    steps, batch, inputs, hidden = 3, 4, 3, 3
    data = cast(
        dtype,
        x=rng.normal(size=(steps, batch, inputs)),
        h0=0.5 * rng.normal(size=(batch, hidden)),
        c0=0.5 * rng.normal(size=(batch, hidden)),
        u=rng.normal(size=(steps, batch, hidden)),
    )
    params = cast(
        dtype,
        Wx=rng.normal(size=(inputs, 4 * hidden)) / math.sqrt(inputs),
        Wh=rng.normal(size=(hidden, 4 * hidden)) / math.sqrt(hidden),
        **{f"b_{gate}": 0.2 * rng.normal(size=hidden) for gate in GATES},
    )

    def run(p, d):
        h, c, cache = d["h0"], d["c0"], []
        bias = np.concatenate([p[f"b_{gate}"] for gate in GATES])
        for t in range(steps):
            a = d["x"][t] @ p["Wx"] + h @ p["Wh"] + bias
            i, f, o = (_sigmoid(a[:, k * hidden : (k + 1) * hidden]) for k in range(3))
            g = np.tanh(a[:, 3 * hidden :])
            cache.append((h, c, i, f, o, g))
            c = f * c + i * g
            h = o * np.tanh(c)
            cache[-1] += (c, h)
        return cache

    def objective(p):
        return sum(_total(u * step[-1]) for u, step in zip(data["u"], run(p, data)))

    p, d = float64(params), float64(data)
    grads = {name: np.zeros_like(value) for name, value in p.items()}
    dh_next, dc_next = np.zeros_like(d["h0"]), np.zeros_like(d["c0"])
    cache = run(p, d)
    for t in reversed(range(steps)):
        h_prev, c_prev, i, f, o, g, c, _ = cache[t]
        dh = d["u"][t] + dh_next
        tc = np.tanh(c)
        dc = dh * o * (1 - tc * tc) + (0.0 if mistake == "dc assigned" else dc_next)
        dgate = {"i": dc * g * i * (1 - i), "o": dh * tc * o * (1 - o), "g": dc * i * (1 - g * g)}
        # sigmoid(f) where sigmoid'(·) = f(1 - f) belongs: f is already the gate's activation
        dgate["f"] = dc * c_prev * (_sigmoid(f) if mistake == "sigmoid of the gate" else f * (1 - f))
        da = np.concatenate([dgate[gate] for gate in GATES], axis=1)
        grads["Wx"] += d["x"][t].T @ da
        grads["Wh"] += h_prev.T @ da
        for gate in GATES:
            source = "f" if mistake == "bias copy-paste" and gate in ("i", "o") else gate
            grads[f"b_{gate}"] += dgate[source].sum(axis=0)
        dh_next, dc_next = da @ p["Wh"].T, dc * f
    return objective, params, grads


def lstm_forget_gate_sigmoid_not_derivative(dtype, rng, buggy):
    return _lstm(dtype, rng, "sigmoid of the gate" if buggy else None)


def lstm_bias_gradients_copy_paste(dtype, rng, buggy):
    return _lstm(dtype, rng, "bias copy-paste" if buggy else None)


def lstm_cell_gradient_assigned(dtype, rng, buggy):
    return _lstm(dtype, rng, "dc assigned" if buggy else None)


def softmax_backward_diagonal_only(dtype, rng, buggy):
    data = cast(dtype, x=rng.normal(size=(6, 4)), u=rng.normal(size=(6, 5)))
    params = cast(dtype, W=0.5 * rng.normal(size=(4, 5)))

    def objective(p):
        return _total(data["u"] * _softmax(data["x"] @ p["W"]))

    p, d = float64(params), float64(data)
    s = _softmax(d["x"] @ p["W"])
    if buggy:  # output·(1 − output) alone: the Jacobian's off-diagonal terms left out
        dz = d["u"] * s * (1 - s)
    else:
        dz = s * (d["u"] - np.sum(d["u"] * s, axis=1, keepdims=True))
    return objective, params, {"W": d["x"].T @ dz}


def swish_beta_missing_sigmoid_derivative(dtype, rng, buggy):
    data = cast(dtype, u=rng.normal(size=(6, 4)))
    params = cast(dtype, x=rng.normal(size=(6, 4)), beta=np.array([1.3]))

    def objective(p):
        return _total(data["u"] * p["x"] * _sigmoid(p["beta"][0] * p["x"]))

    p, u = float64(params), float64(data)["u"]
    s = _sigmoid(p["beta"][0] * p["x"])
    dx = u * (s + p["beta"][0] * p["x"] * s * (1 - s))
    slope = 1.0 if buggy else s * (1 - s)  # the σ(βx)(1 − σ(βx)) factor left out
    return objective, params, {"x": dx, "beta": np.array([np.sum(u * p["x"] ** 2 * slope)])}


CASES = [
    RealBug(
        "cbow_repeated_context_word",
        "numpy",
        "https://github.com/piskvorky/gensim/issues/242",
        "syn0[word_indices] += neu1e: a fancy-index += adds a context word that repeats in the window once",
        ("W_in",),
        ("localized",),
        cbow_repeated_context,
        factor=0.5,
    ),
    RealBug(
        "rnn_backward_upstream_never_injected",
        "numpy",
        "https://community.deeplearning.ai/t/question-on-backpropagation-week-1-prog-assignment-1/555129",
        "rnn_backward passes da_prevt alone to rnn_cell_backward, never da[:, :, t]: every gradient is 0",
        ("Wx", "Wh", "b"),
        ("zero",),
        rnn_upstream_never_injected,
    ),
    RealBug(
        "rnn_backward_no_backprop_through_time",
        "numpy",
        "https://community.deeplearning.ai/t/c5-w1a1-optional-rnn-back-propagation/48297",
        "rnn_backward passes da[:, :, t] alone, dropping da_prevt: no backprop through time",
        ("Wx", "Wh", "b"),
        (),
        rnn_no_backprop_through_time,
    ),
    RealBug(
        "micrograd_assign_instead_of_accumulate",
        "numpy",
        "https://github.com/karpathy/nn-zero-to-hero/issues/52 (lecture note: '= instead of +=')",
        "exp's _backward sets self.grad = ... instead of +=: a value used twice keeps one use's gradient",
        ("w",),
        (),
        micrograd_assign_in_backward,
    ),
    RealBug(
        "softmax_jacobian_uses_input",
        "numpy",
        "https://python.dizzycoding.com/numpy-calculate-the-derivative-of-the-softmax-function/ (Stack Overflow question)",
        "softmax Jacobian written value[i]·(δij − input[j]): the input where the softmax output belongs",
        ("W",),
        (),
        softmax_jacobian_uses_input,
    ),
    RealBug(
        "maxpool_return_inside_loop",
        "numpy",
        "https://github.com/riccardoandreoni0/CNN-from-scratch/issues/1",
        "max-pool back_prop's return indented into the patch loop: only the first window gets its gradient",
        ("x",),
        ("zero",),
        maxpool_return_inside_loop,
    ),
    RealBug(
        "output_layer_missing_sigmoid_derivative",
        "numpy",
        "https://github.com/Bot-Academy/NeuralNetworkFromScratch/pull/3",
        "output delta (o − y) without the output sigmoid's derivative o(1 − o)",
        ("W1", "b1", "W2", "b2"),
        (),
        output_layer_missing_sigmoid_derivative,
    ),
    RealBug(
        "hidden_delta_after_weight_update",
        "numpy",
        "https://github.com/louisjc/mnist-neural-network/issues/1",
        "hidden deltas computed with the output weights already updated by the SGD step",
        ("W1", "b1"),
        (),
        hidden_delta_after_weight_update,
    ),
    RealBug(
        "sigmoid_backward_on_input",
        "numpy",
        "https://github.com/BoltzmannEntropy/interviews.ai/issues/15",
        "Sigmoid.backward uses self.x·(1 − self.x) with self.x the input, not sigmoid(x)",
        ("W", "b"),
        (),
        sigmoid_backward_on_input,
    ),
    RealBug(
        "softmax_gradient_factor_two",
        "numpy",
        "https://github.com/markroxor/fromscratchtoml/issues/65",
        "softmax gradient off by a factor of two (rebuilt: ½‖s − y‖² differentiated as 2(s − y))",
        ("W",),
        ("scale",),
        softmax_squared_error_factor_two,
        factor=2.0,
    ),
    RealBug(
        "softmax_loss_normalized_by_numel",
        "numpy",
        "https://github.com/victorlempitsky/Mate/issues/2",
        "softmax loss derivative divided by numel(x) (batch × classes) instead of the batch size",
        ("W", "b"),
        ("scale",),
        softmax_loss_normalized_by_numel,
        factor=0.2,
    ),
    RealBug(
        "inverse_backward_transpose_is_noop",
        "numpy",
        "https://github.com/pytorch/pytorch.github.io/issues/2135",
        "inv backward -(Rᵀ G Rᵀ) written with ndarray.transpose(-2, -1), which leaves a matrix as it is",
        ("A",),
        (),
        inverse_backward_transpose_is_noop,
    ),
    RealBug(
        "pow_backward_exponent_twice",
        "numpy",
        "https://github.com/haydnv/tinychain/pull/160",
        "the gradient of x**2 multiplied by the exponent twice (in backward and again in gradients)",
        ("x",),
        ("scale",),
        pow_backward_exponent_twice,
        factor=2.0,
    ),
    RealBug(
        "conv1d_weight_gradient_reversed",
        "numpy",
        "https://end-to-end-machine-learning.teachable.com/courses/322-convolutional-neural-networks-in-two-dimensions/lectures/24726662",
        "weight gradient cross-correlated with the arguments in the wrong order: the kernel's gradient reversed",
        ("w",),
        (),
        conv1d_weight_gradient_reversed,
    ),
    RealBug(
        "matmul_backward_uses_output",
        "numpy",
        "https://github.com/Shubham-cyber-prog/100-Days-Of-Web-Development-ECWoC26/pull/1378 (review)",
        "matmul backward multiplies the forward output C where the upstream gradient dC belongs",
        ("A", "B"),
        (),
        matmul_backward_uses_output,
    ),
    RealBug(
        "layernorm_mean_subtracted_twice",
        "numpy",
        "https://github.com/tenstorrent/tt-metal/issues/53204",
        "layer norm dx subtracts mean(dy·γ) twice (an accumulating register not zeroed)",
        ("x",),
        (),
        layernorm_mean_subtracted_twice,
    ),
    RealBug(
        "layernorm_rank3_backward_as_2d",
        "numpy",
        "https://github.com/flagos-ai/FlagGems/issues/5392",
        "layer_norm_backward takes rows = input.shape[0] for a [batch, seq, hidden] input: reductions over seq·hidden",
        ("x",),
        (),
        layernorm_rank3_backward_as_2d,
    ),
    RealBug(
        "invertible_layernorm_gamma_wrong_index",
        "numpy",
        "https://github.com/deepspeedai/DeepSpeed/pull/692",
        "invertible LayerNormBackward recovers x̂ = (y − β)/γ with γ, β read at another feature's index",
        ("gamma",),
        (),
        invertible_layernorm_gamma_wrong_index,
    ),
    RealBug(
        "lstm_forget_gate_sigmoid_not_derivative",
        "numpy",
        "https://github.com/CaptainE/RNN-LSTM-in-numpy/issues/1",
        "df = sigmoid(f) * df: the sigmoid of the gate where its derivative f(1 − f) belongs",
        ("Wx", "Wh", "b_i", "b_f", "b_o", "b_g"),
        (),
        lstm_forget_gate_sigmoid_not_derivative,
    ),
    RealBug(
        "lstm_bias_gradients_copy_paste",
        "numpy",
        "https://github.com/hanbt/learn_dl/issues/53",
        "bi_grad = delta_f and bo_grad = delta_f: the forget gate's delta copied into two other biases",
        ("b_i", "b_o"),
        (),
        lstm_bias_gradients_copy_paste,
    ),
    RealBug(
        "lstm_cell_gradient_assigned",
        "numpy",
        "https://github.com/apache/mxnet/issues/4057",
        "dCt = dht·o·(1 − tanh²Ct) where += belongs: the cell gradient from the next step is dropped",
        ("Wx", "Wh", "b_i", "b_f", "b_o", "b_g"),
        (),
        lstm_cell_gradient_assigned,
    ),
    RealBug(
        "softmax_backward_diagonal_only",
        "numpy",
        "https://github.com/deeplearning4j/libnd4j/issues/440",
        "softmax derivative output·(1 − output) only: the Jacobian's off-diagonal (dot product) term missing",
        ("W",),
        (),
        softmax_backward_diagonal_only,
    ),
    RealBug(
        "swish_beta_missing_sigmoid_derivative",
        "numpy",
        "https://github.com/RubixML/ML/pull/437",
        "Swish's one-element β gradient without the σ(βx)(1 − σ(βx)) factor",
        ("beta",),
        (),
        swish_beta_missing_sigmoid_derivative,
    ),
]

# issue 32's cases, a module of their own
from _realbugs_norms import CASES as _NORM_CASES  # noqa: E402

CASES += _NORM_CASES
