"""Four hand-written torch.autograd.Functions, each with one bug, checked with gradcheck_cli.torch (needs torch).

* GELU, tanh approximation, ½x(1 + tanh(c(x + 0.044715x³))): the wrong
  backward differentiates x³ as x³ instead of 3x² (it keeps 0.044715x², no 3).
* Layer norm over the last axis with weight and bias, returning (y, 1/σ)
  with 1/σ marked non-differentiable: the wrong backward drops the
  x̂·mean(dx̂·x̂) term, so the input's gradient is wrong and weight and bias
  are right.
* Softmax cross-entropy, mean over rows, integer targets: the wrong backward
  subtracts the one-hot with ``grad[:, targets]`` instead of
  ``grad[rows, targets]``, every row at every target's column.
* One attention head, softmax(x Wq (x Wk)ᵀ/√d) x Wv: the wrong backward
  forgets the row sum in softmax's backward (dS = A ⊙ dA), so x, Wq and Wk
  fail and Wv, which does not see dS, passes.

Each ``NAME(dtype)`` returns ``(fn, inputs)`` for
:func:`gradcheck_cli.torch.check_function`, and so does each
``wrong_NAME(dtype)`` with the bug; ``gradcheck check`` takes them as they are:

    python examples/torch_functions.py
    gradcheck check examples/torch_functions.py:attention         # exit 0
    gradcheck check examples/torch_functions.py:wrong_attention   # exit 1: inputs[0], inputs[1], inputs[2]
"""

import math
import sys

import torch

from gradcheck_cli.torch import check_function

GELU_CUBIC = 0.044715
GELU_SCALE = math.sqrt(2.0 / math.pi)
LAYER_NORM_EPSILON = 1e-5


class Gelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, wrong=False):
        ctx.save_for_backward(x)
        ctx.wrong = wrong
        return 0.5 * x * (1.0 + torch.tanh(GELU_SCALE * (x + GELU_CUBIC * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        tanh = torch.tanh(GELU_SCALE * (x + GELU_CUBIC * x**3))
        cubic = GELU_CUBIC if ctx.wrong else 3.0 * GELU_CUBIC
        slope = 0.5 * (1.0 + tanh) + 0.5 * x * (1.0 - tanh * tanh) * GELU_SCALE * (1.0 + cubic * x * x)
        return grad_output * slope, None


class LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, wrong=False):
        centered = x - x.mean(dim=-1, keepdim=True)
        inverse_std = torch.rsqrt((centered * centered).mean(dim=-1, keepdim=True) + LAYER_NORM_EPSILON)
        normalized = centered * inverse_std
        ctx.save_for_backward(normalized, inverse_std, weight)
        ctx.wrong = wrong
        ctx.mark_non_differentiable(inverse_std)
        return normalized * weight + bias, inverse_std

    @staticmethod
    def backward(ctx, grad_output, _grad_inverse_std):
        normalized, inverse_std, weight = ctx.saved_tensors
        grad_normalized = grad_output * weight
        grad_x = grad_normalized - grad_normalized.mean(dim=-1, keepdim=True)
        if not ctx.wrong:
            grad_x = grad_x - normalized * (grad_normalized * normalized).mean(dim=-1, keepdim=True)
        rows = grad_output.reshape(-1, grad_output.shape[-1])
        grad_weight = (rows * normalized.reshape(rows.shape)).sum(dim=0)
        return grad_x * inverse_std, grad_weight, rows.sum(dim=0), None


class SoftmaxCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, wrong=False):
        log_probabilities = logits - torch.logsumexp(logits, dim=1, keepdim=True)
        ctx.save_for_backward(log_probabilities.exp(), targets)
        ctx.wrong = wrong
        return -log_probabilities.gather(1, targets[:, None]).mean()

    @staticmethod
    def backward(ctx, grad_output):
        probabilities, targets = ctx.saved_tensors
        grad = probabilities.clone()
        if ctx.wrong:
            grad[:, targets] -= 1.0
        else:
            grad[torch.arange(len(targets)), targets] -= 1.0
        return grad * (grad_output / len(targets)), None, None


class AttentionHead(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, query_weight, key_weight, value_weight, wrong=False):
        query, key, value = x @ query_weight, x @ key_weight, x @ value_weight
        attention = torch.softmax(query @ key.T / math.sqrt(query.shape[-1]), dim=-1)
        ctx.save_for_backward(x, query_weight, key_weight, value_weight, query, key, value, attention)
        ctx.wrong = wrong
        return attention @ value

    @staticmethod
    def backward(ctx, grad_output):
        x, query_weight, key_weight, value_weight, query, key, value, attention = ctx.saved_tensors
        scale = 1.0 / math.sqrt(query.shape[-1])
        grad_attention = grad_output @ value.T
        grad_value = attention.T @ grad_output
        if ctx.wrong:
            grad_scores = attention * grad_attention
        else:
            grad_scores = attention * (grad_attention - (attention * grad_attention).sum(dim=-1, keepdim=True))
        grad_query = grad_scores @ key * scale
        grad_key = grad_scores.T @ query * scale
        grad_x = grad_query @ query_weight.T + grad_key @ key_weight.T + grad_value @ value_weight.T
        return grad_x, x.T @ grad_query, x.T @ grad_key, x.T @ grad_value, None


def _tensors(dtype, *shapes, scales=None, offsets=None, seed=0):
    """Seeded inputs that require grad, made in float64 and rounded once into ``dtype``."""
    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for index, shape in enumerate(shapes):
        values = torch.randn(shape, generator=generator, dtype=torch.float64)
        values = values * (scales[index] if scales else 1.0) + (offsets[index] if offsets else 0.0)
        tensors.append(values.to(dtype).requires_grad_())
    return tuple(tensors)


def gelu(dtype=torch.float64, wrong=False):
    """(fn, inputs): GELU of a [4, 6] tensor of values of order 1.5."""
    return (lambda x: Gelu.apply(x, wrong)), _tensors(dtype, (4, 6), scales=[1.5])


def layer_norm(dtype=torch.float64, wrong=False):
    """(fn, inputs): layer norm of [4, 6] rows with a weight near 1 and a small bias."""
    inputs = _tensors(dtype, (4, 6), (6,), (6,), scales=[1.0, 0.2, 0.2], offsets=[0.0, 1.0, 0.0], seed=1)
    return (lambda x, weight, bias: LayerNorm.apply(x, weight, bias, wrong)), inputs


def cross_entropy(dtype=torch.float64, wrong=False):
    """(fn, inputs): the mean softmax cross-entropy of [5, 4] logits; the targets are not checked."""
    (logits,) = _tensors(dtype, (5, 4), seed=2)
    targets = torch.tensor([0, 3, 1, 3, 2])
    return (lambda logits, targets: SoftmaxCrossEntropy.apply(logits, targets, wrong)), (logits, targets)


def attention(dtype=torch.float64, wrong=False):
    """(fn, inputs): one attention head over 5 tokens of width 6, head size 4."""
    inputs = _tensors(dtype, (5, 6), (6, 4), (6, 4), (6, 4), scales=[1.0, 0.4, 0.4, 0.4], seed=3)
    return (lambda x, wq, wk, wv: AttentionHead.apply(x, wq, wk, wv, wrong)), inputs


def wrong_gelu(dtype=torch.float64):
    return gelu(dtype, wrong=True)


def wrong_layer_norm(dtype=torch.float64):
    return layer_norm(dtype, wrong=True)


def wrong_cross_entropy(dtype=torch.float64):
    return cross_entropy(dtype, wrong=True)


def wrong_attention(dtype=torch.float64):
    return attention(dtype, wrong=True)


FUNCTIONS = {"gelu": gelu, "layer_norm": layer_norm, "cross_entropy": cross_entropy, "attention": attention}


def main() -> int:
    """Check every function, correct and wrong, in float64 and float32; 0 when exactly the wrong ones fail."""
    outcomes = []
    for dtype in (torch.float64, torch.float32):
        for name, make in FUNCTIONS.items():
            for wrong in (False, True):
                report = check_function(*make(dtype, wrong=wrong))
                verdict = "passed" if report.passed else "failed: " + ", ".join(report.failing_parameters)
                label = ("wrong_" if wrong else "") + name
                print(f"{label} ({str(dtype).removeprefix('torch.')}): {report.checked} coordinates, {verdict}")
                outcomes.append(report.passed != wrong)
    return 0 if all(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
