"""Real, publicly reported mistakes in torch.autograd.Function backward passes, each rebuilt small.

Every builder returns ``(fn, inputs)``: ``fn(*inputs)`` applies the Function as reported
(``buggy=True``) or as fixed, and the inputs that require grad are the checked ones
(``inputs[0]``, ...). Cases with ``order=2`` are double-backward mistakes. Each is our own minimal
reconstruction of the mistake named in ``mistake``, not the reporter's code. Importing this
module imports torch.
"""

from __future__ import annotations

import torch
from torch.autograd import Function

from _realbugs_case import RealBug


def _tensor(values, dtype, requires_grad=True):
    return torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=requires_grad)


class _ISRLU(Function):
    @staticmethod
    def forward(ctx, x, buggy):
        nisr = torch.rsqrt(1 + torch.clamp(x, max=0) ** 2)
        ctx.save_for_backward(nisr)
        ctx.buggy = buggy
        return x * nisr

    @staticmethod
    def backward(ctx, grad_out):
        (nisr,) = ctx.saved_tensors
        if ctx.buggy:
            return nisr**3, None  # the local derivative alone: grad_out never multiplied in
        return grad_out * nisr**3, None


def isrlu_backward_ignores_grad_output(dtype, rng, buggy):
    return (lambda x: _ISRLU.apply(x, buggy)), (_tensor(rng.normal(size=(5, 4)), dtype),)


class _SixTimesSavedOnCtx(Function):
    """out = 6·x, its backward computed from an intermediate and the input stashed on ctx."""

    @staticmethod
    def forward(ctx, x):
        temp = x * 2
        ctx.temp, ctx.inp = temp, x
        return temp * 3

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * torch.full_like(grad_out, 3) * ctx.temp / ctx.inp


class _SixTimes(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 6

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * 6


def ctx_attributes_break_double_backward(dtype, rng, buggy):
    function = _SixTimesSavedOnCtx if buggy else _SixTimes
    return function.apply, (_tensor(rng.uniform(0.5, 2.0, size=(3, 4)), dtype),)


class _SquareOfDoubleOnCtx(Function):
    """out = (2x)², the intermediate 2x stashed on ctx (no graph to x in double backward)."""

    @staticmethod
    def forward(ctx, x):
        intermediate = x * 2
        ctx.foo = intermediate
        return intermediate**2

    @staticmethod
    def backward(ctx, grad_out):
        return 2 * 2 * ctx.foo * grad_out


class _SquareOfDouble(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x * 2) ** 2

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return 8 * x * grad_out


def intermediate_on_ctx_double_backward(dtype, rng, buggy):
    function = _SquareOfDoubleOnCtx if buggy else _SquareOfDouble
    return function.apply, (_tensor(rng.normal(size=(3, 4)), dtype),)


class _SquareByInnerGrad(Function):
    """x², its backward from torch.autograd.grad on a detached copy of x made in forward."""

    @staticmethod
    def forward(ctx, x):
        x = x.detach().requires_grad_()
        ctx.x = x
        with torch.enable_grad():
            ctx.result = x**2
        return ctx.result.detach()

    @staticmethod
    def backward(ctx, grad_out):
        (grad_x,) = torch.autograd.grad(ctx.result, ctx.x, grad_outputs=grad_out, create_graph=True)
        return grad_x


class _Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**2

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_out


def detached_copy_double_backward(dtype, rng, buggy):
    function = _SquareByInnerGrad if buggy else _Square
    return function.apply, (_tensor(rng.normal(size=(3, 4)), dtype),)


class _MulConstant(Function):
    @staticmethod
    def forward(ctx, tensor, constant, buggy):
        ctx.constant, ctx.buggy = constant, buggy
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        if ctx.buggy:
            return grad_output, None, None  # the constant's factor left out
        return grad_output * ctx.constant, None, None


def mulconstant_backward_missing_constant(dtype, rng, buggy):
    return (lambda x: _MulConstant.apply(x, 5.0, buggy)), (_tensor(rng.normal(size=(4, 3)), dtype),)


class _Prod(Function):
    @staticmethod
    def forward(ctx, x, buggy):
        result = x.prod()
        ctx.save_for_backward(x, result)
        ctx.buggy = buggy
        return result

    @staticmethod
    def backward(ctx, grad_output):
        x, result = ctx.saved_tensors
        if ctx.buggy:
            return result / x, None  # grad_output never multiplied in (-x.prod() got +grads)
        return grad_output * result / x, None


def prod_backward_ignores_grad_output(dtype, rng, buggy):
    values = rng.uniform(0.6, 1.4, size=6) * rng.choice([-1.0, 1.0], size=6)
    return (lambda x: _Prod.apply(x, buggy)), (_tensor(values, dtype),)


class _TanhAttention(Function):
    """o = tanh(q kᵀ) v; the buggy backward reads q kᵀ saved from forward, an intermediate."""

    @staticmethod
    def forward(ctx, q, k, v, buggy):
        scores = q @ k.t()
        ctx.buggy = buggy
        ctx.save_for_backward(q, k, v, scores)
        return torch.tanh(scores) @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, saved_scores = ctx.saved_tensors
        scores = saved_scores if ctx.buggy else q @ k.t()
        attention = torch.tanh(scores)
        grad_scores = (grad_out @ v.t()) * (1 - attention**2)
        return grad_scores @ k, grad_scores.t() @ q, attention.t() @ grad_out, None


def attention_saved_intermediate_double_backward(dtype, rng, buggy):
    q, k, v = (_tensor(0.7 * rng.normal(size=shape), dtype) for shape in ((4, 3), (5, 3), (5, 2)))
    return (lambda q, k, v: _TanhAttention.apply(q, k, v, buggy)), (q, k, v)


class _Gather(Function):
    @staticmethod
    def forward(ctx, x, index, buggy):
        ctx.save_for_backward(index)
        ctx.size, ctx.buggy = x.shape[0], buggy
        return x[index]

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        grad_x = grad_out.new_zeros(ctx.size)
        if ctx.buggy:
            grad_x[index] = grad_out  # assignment: a repeated index keeps one copy's gradient
        else:
            grad_x.index_add_(0, index, grad_out)
        return grad_x, None, None


def indexing_duplicates_keep_one_gradient(dtype, rng, buggy):
    index = torch.tensor([0, 3, 3, 5, 1, 5, 7, 2])
    return (lambda x: _Gather.apply(x, index, buggy)), (_tensor(rng.normal(size=8), dtype),)


class _RMSNorm(Function):
    """y = x·r·w over the last axis, r = (mean(x²) + ε)^(-1/2); with ``buggy`` the input gradient's
    variance term carries the weight twice (−w_k·r³·x_k·Σ g·x·w / D)."""

    @staticmethod
    def forward(ctx, x, w, buggy):
        r = torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-6)
        ctx.save_for_backward(x, w, r)
        ctx.buggy = buggy
        return x * r * w

    @staticmethod
    def backward(ctx, g):
        x, w, r = ctx.saved_tensors
        s = torch.sum(g * x * w, dim=-1, keepdim=True)
        variance = r**3 * x * s / x.shape[-1]
        dx = g * w * r - (w * variance if ctx.buggy else variance)
        return dx, torch.sum(g * x * r, dim=0), None


def rmsnorm_variance_term_weight_twice(dtype, rng, buggy):
    x, w = _tensor(rng.normal(size=(4, 6)), dtype), _tensor(1 + 0.3 * rng.normal(size=6), dtype)
    return (lambda x, w: _RMSNorm.apply(x, w, buggy)), (x, w)


class _PreNorm(Function):
    """res = x + residual, out = RMSNorm(res)·w, returning (out, res); with ``buggy`` the backward
    normalizes the sum of both incoming gradients, (dres + dout)·dnorm, where dres + dout·dnorm belongs."""

    @staticmethod
    def forward(ctx, x, residual, w, buggy):
        res = x + residual
        r = torch.rsqrt(torch.mean(res * res, dim=-1, keepdim=True) + 1e-6)
        ctx.save_for_backward(res, w, r)
        ctx.buggy = buggy
        return res * r * w, res

    @staticmethod
    def backward(ctx, dout, dres):
        res, w, r = ctx.saved_tensors

        def through_norm(g):
            s = torch.sum(g * res * w, dim=-1, keepdim=True)
            return g * w * r - r**3 * res * s / res.shape[-1]

        d = through_norm(dres + dout) if ctx.buggy else dres + through_norm(dout)
        return d, d, torch.sum(dout * res * r, dim=0), None


def prenorm_residual_gradient_through_norm(dtype, rng, buggy):
    x, residual = _tensor(rng.normal(size=(3, 5)), dtype), _tensor(rng.normal(size=(3, 5)), dtype)
    w = _tensor(1 + 0.3 * rng.normal(size=5), dtype)
    return (lambda x, residual, w: _PreNorm.apply(x, residual, w, buggy)), (x, residual, w)


CASES = [
    RealBug(
        "isrlu_backward_ignores_grad_output",
        "torch",
        "https://github.com/pytorch/pytorch/issues/4355",
        "ISRLU backward returns nisr**3, never multiplied by grad_out (a missing cotangent)",
        ("inputs[0]",),
        (),
        isrlu_backward_ignores_grad_output,
    ),
    RealBug(
        "ctx_attributes_break_double_backward",
        "torch",
        "https://github.com/pytorch/pytorch/issues/76185",
        "out = 6x with backward gO·3·ctx.temp/ctx.inp: right first derivative, double backward −6·u·v/x where 0 belongs",
        ("inputs[0]",),
        (),
        ctx_attributes_break_double_backward,
        order=2,
    ),
    RealBug(
        "intermediate_on_ctx_double_backward",
        "torch",
        "https://github.com/pytorch/pytorch/issues/58509",
        "(2x)² with backward 4·ctx.foo·g, ctx.foo = 2x stashed on ctx: double backward silently 0",
        ("inputs[0]",),
        ("zero",),
        intermediate_on_ctx_double_backward,
        order=2,
    ),
    RealBug(
        "detached_copy_double_backward",
        "torch",
        "https://github.com/pytorch/pytorch/issues/99523",
        "backward = autograd.grad of a result built on x.detach().requires_grad_() in forward: no second derivative",
        ("inputs[0]",),
        ("zero",),
        detached_copy_double_backward,
        order=2,
    ),
    RealBug(
        "mulconstant_backward_missing_constant",
        "torch",
        "https://github.com/zergtant/pytorch-handbook/issues/69",
        "MulConstant.backward returns grad_output, not grad_output * ctx.constant",
        ("inputs[0]",),
        ("scale",),
        mulconstant_backward_missing_constant,
        factor=0.2,
    ),
    RealBug(
        "prod_backward_ignores_grad_output",
        "torch",
        "https://github.com/pytorch/pytorch/issues/995",
        "prod's backward returns prod/x without grad_output: -x.prod() got the gradient of +x.prod()",
        ("inputs[0]",),
        ("scale", "sign"),
        prod_backward_ignores_grad_output,
    ),
    RealBug(
        "attention_saved_intermediate_double_backward",
        "torch",
        "https://github.com/pytorch/pytorch/pull/62124 (review)",
        "tanh-attention backward reads q·kᵀ saved in forward (an intermediate): double backward misses its terms",
        ("inputs[0]", "inputs[1]"),
        (),
        attention_saved_intermediate_double_backward,
        order=2,
    ),
    RealBug(
        "indexing_duplicates_keep_one_gradient",
        "torch",
        "https://github.com/pytorch/pytorch/issues/1528",
        "gather backward assigns grad_x[index] = g: a duplicated index keeps only one copy's gradient",
        ("inputs[0]",),
        ("localized",),
        indexing_duplicates_keep_one_gradient,
    ),
    RealBug(
        "rmsnorm_variance_term_weight_twice",
        "torch",
        "https://github.com/NVIDIA/Megatron-LM/pull/6859",
        "BatchInvariantRMSNormFn's input gradient multiplies the variance term by the weight twice",
        ("inputs[0]",),
        (),
        rmsnorm_variance_term_weight_twice,
    ),
    RealBug(
        "prenorm_residual_gradient_through_norm",
        "torch",
        "https://github.com/Dao-AILab/quack/pull/53",
        "RMS pre-norm backward computes (dres + dout)·dnorm where dres + dout·dnorm belongs",
        ("inputs[0]", "inputs[1]"),
        (),
        prenorm_residual_gradient_through_norm,
    ),
]
