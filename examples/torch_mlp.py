"""A torch MLP on the CPU, checked with gradcheck_cli.torch.check_module (needs torch).

torch is not a dependency of gradcheck; this example needs it installed
(its CPU build is enough, installed as docs/torch.md shows). The output layer is a
custom ``torch.autograd.Function`` with a hand-written backward: the code a
gradient check is for. :func:`~gradcheck_cli.torch.module_problem` turns the
model and its loss into a problem whose parameters are views of the model's
own parameters (``l1.weight`` as torch names it), so writing a probe into a
view changes what the model computes and restoring the view restores the
model. The model is float32 (torch's default), so float32's probes and
defaults apply.

``wrong_problem``'s backward returns the mean of the output gradient over
the batch for the bias instead of its sum: ``out.bias`` fails, nothing else.

    python examples/torch_mlp.py
    gradcheck check examples/torch_mlp.py:problem         # exit 0
    gradcheck check examples/torch_mlp.py:wrong_problem   # exit 1, out.bias fails
"""

import sys

import torch
from mlp import main as check_and_print

from gradcheck_cli import GradientProblem
from gradcheck_cli.torch import module_problem

BATCH, FEATURES, HIDDEN, CLASSES = 8, 5, 6, 4


class HandWrittenLinear(torch.autograd.Function):
    """y = x Wᵀ + b with a hand-written backward (optionally with the bias bug)."""

    @staticmethod
    def forward(ctx, inputs, weight, bias, mean_bias_gradient):
        ctx.save_for_backward(inputs, weight)
        ctx.mean_bias_gradient = mean_bias_gradient
        return inputs @ weight.T + bias

    @staticmethod
    def backward(ctx, grad_output):
        inputs, weight = ctx.saved_tensors
        grad_bias = grad_output.mean(dim=0) if ctx.mean_bias_gradient else grad_output.sum(dim=0)
        return grad_output @ weight, grad_output.T @ inputs, grad_bias, None


class TinyMlp(torch.nn.Module):
    def __init__(self, mean_bias_gradient=False):
        super().__init__()
        self.hidden = torch.nn.Linear(FEATURES, HIDDEN)
        self.out = torch.nn.Linear(HIDDEN, CLASSES)
        self.mean_bias_gradient = mean_bias_gradient

    def forward(self, inputs):
        hidden = torch.tanh(self.hidden(inputs))
        return HandWrittenLinear.apply(hidden, self.out.weight, self.out.bias, self.mean_bias_gradient)


def build(mean_bias_gradient=False) -> tuple:
    """``(model, loss_fn)``: the seeded model and its cross-entropy on a seeded batch."""
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():  # seeded initialisation without touching the caller's generator
        torch.manual_seed(0)
        model = TinyMlp(mean_bias_gradient)
    inputs = torch.randn(BATCH, FEATURES, generator=generator)
    targets = torch.randint(0, CLASSES, (BATCH,), generator=generator)
    return model, lambda model: torch.nn.functional.cross_entropy(model(inputs), targets)


def problem() -> GradientProblem:
    """The correct hand-written backward: passes at float32's defaults."""
    return module_problem(*build())


def wrong_problem() -> GradientProblem:
    """The bias gradient is a mean instead of a sum: out.bias fails."""
    return module_problem(*build(mean_bias_gradient=True))


if __name__ == "__main__":
    sys.exit(check_and_print((("problem", problem), ("wrong_problem", wrong_problem))))
