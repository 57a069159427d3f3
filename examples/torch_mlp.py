"""A torch MLP on the CPU, checked through numpy views of its parameters (needs torch).

torch is not a dependency of gradcheck; this example needs it installed
(the CPU build is enough). The output layer is a custom
``torch.autograd.Function`` with a hand-written backward: the code a
gradient check is for. The parameters handed to gradcheck are
``parameter.detach().numpy()``: views that share memory with the model, so
writing a probe into the view changes what the model computes, and
restoring the view restores the model, with no adapter. The model is
float32 (torch's default), so float32's probes and defaults apply.

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


def build(mean_bias_gradient=False) -> GradientProblem:
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():  # seeded initialisation without touching the caller's generator
        torch.manual_seed(0)
        model = TinyMlp(mean_bias_gradient)
    inputs = torch.randn(BATCH, FEATURES, generator=generator)
    targets = torch.randint(0, CLASSES, (BATCH,), generator=generator)

    loss = torch.nn.functional.cross_entropy(model(inputs), targets)
    model.zero_grad()
    loss.backward()
    # Views, not copies: writing into these arrays writes into the model's parameters.
    parameters = {name: parameter.detach().numpy() for name, parameter in model.named_parameters()}
    gradients = {name: parameter.grad.numpy().copy() for name, parameter in model.named_parameters()}

    def objective(_views):
        with torch.no_grad():
            return torch.nn.functional.cross_entropy(model(inputs), targets).item()

    return GradientProblem(objective, parameters, gradients)


def problem() -> GradientProblem:
    """The correct hand-written backward: passes at float32's defaults."""
    return build()


def wrong_problem() -> GradientProblem:
    """The bias gradient is a mean instead of a sum: out.bias fails."""
    return build(mean_bias_gradient=True)


if __name__ == "__main__":
    sys.exit(check_and_print((("problem", problem), ("wrong_problem", wrong_problem))))
