"""PyTorch's own tests of its gradcheck, ported: small functions with what ``torch.autograd.gradcheck`` does.

Each :class:`Scenario` names the torch test it comes from (``test/test_autograd.py``'s
``test_gradcheck_*``, and the Functions of ``torch.testing._internal.autograd_function_db``), builds a
fresh ``(fn, inputs)``, and carries torch's checker with the options that test passes (``peer``) and
what torch 2.13 does with them (``expected``), recorded by running it; ``benchmarks/parity.py`` runs it
again and says when torch does something else. ``options`` are what gradcheck is asked, in the API of
issues 31 and 33 (``order``, ``modes``, ``batched``, ``nondet_tol``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch
from torch.autograd import Function
from torch.autograd import forward_ad as fwAD
from torch.testing._internal import autograd_function_db as function_db


@dataclass(frozen=True)
class Expected:
    """What torch does: ``outcome`` (passed, failed, refused or raised) and, for an exception, its type and a fragment of its line."""

    outcome: str
    error: str = ""
    fragment: str = ""

    def matches(self, error: BaseException) -> bool:
        return type(error).__name__ == self.error and self.fragment in str(error)


PASSES = Expected("passed")


def fails(error: str, fragment: str) -> Expected:
    return Expected("failed", error, fragment)


def refuses(error: str, fragment: str) -> Expected:
    return Expected("refused", error, fragment)


def raises(error: str, fragment: str) -> Expected:
    """The function's own exception, propagated unchanged."""
    return Expected("raised", error, fragment)


@dataclass(frozen=True)
class TorchCheck:
    """torch's checker as a test calls it: ``gradcheck`` or ``gradgradcheck`` (of ``fn``, or of its gradient)."""

    checker: str = "gradcheck"
    options: Mapping = field(default_factory=dict)
    of_gradient: bool = False

    def __call__(self, fn, inputs) -> bool:
        check = {"gradcheck": torch.autograd.gradcheck, "gradgradcheck": torch.autograd.gradgradcheck}[self.checker]
        return check(gradient_of(fn) if self.of_gradient else fn, inputs, **self.options)

    def __str__(self) -> str:
        arguments = ", ".join(["fn'" if self.of_gradient else "fn", *(f"{k}={v!r}" for k, v in self.options.items())])
        return f"{self.checker}({arguments})"


@dataclass(frozen=True)
class Scenario:
    """One ported case: ``fn`` at fresh ``inputs()``; ``accepts`` are outcomes of gradcheck's that agree besides torch's."""

    name: str
    source: str
    feature: str
    fn: Callable
    inputs: Callable[[], tuple]
    expected: Expected
    peer: TorchCheck = TorchCheck()
    options: Mapping = field(default_factory=dict)
    accepts: frozenset = frozenset()

    def make(self) -> tuple:
        """``(fn, inputs)`` with inputs made afresh (a check may leave gradients or versions on them)."""
        return self.fn, self.inputs()

    def agreeing(self) -> frozenset:
        """gradcheck's outcomes that agree with torch: torch's own, and any the issue allows besides."""
        return self.accepts | {self.expected.outcome}


def gradient_of(fn):
    """``x ↦ ∇ Σ fn(x)`` with a graph, so that gradgradcheck of it checks fn's third derivatives."""

    def gradient(*inputs):
        differentiable = [tensor for tensor in inputs if isinstance(tensor, torch.Tensor) and tensor.requires_grad]
        return torch.autograd.grad(fn(*inputs).sum(), differentiable, create_graph=True)

    return gradient


def tensor(shape, seed: int, dtype=torch.float64, low: float = -1.0, high: float = 1.0, grad: bool = True):
    """A seeded uniform tensor in [low, high) (real and imaginary parts for a complex dtype)."""
    generator = torch.Generator().manual_seed(seed)
    real_dtype = torch.float64
    values = torch.rand(shape, generator=generator, dtype=real_dtype) * (high - low) + low
    if dtype.is_complex:
        values = torch.complex(values, torch.rand(shape, generator=generator, dtype=real_dtype) * (high - low) + low)
    return values.to(dtype).requires_grad_(grad)


def small_complex(seed: int):
    """0.01·U(0, 1) + 0.01i·U(0, 1), drawn as test_gradcheck_adjusted_atol_complex_inputs draws it."""
    generator = torch.Generator().manual_seed(seed)
    return (1e-2 * torch.rand(2, dtype=torch.complex128, generator=generator)).requires_grad_()


def sparse(layout, shape=(2, 2), seed: int = 0):
    """A float64 sparse tensor of ``layout`` (its stored values random) that requires grad."""
    dense = tensor(shape, seed, grad=False, low=0.0)
    return (dense.to_sparse() if layout == torch.sparse_coo else dense.to_sparse(layout=layout)).requires_grad_()


# Functions of the scenarios: each as small as the torch test it ports.


class NonDeterministic(Function):
    """Identity whose backward multiplies by 1 + U(0, 1)·jitter (test_gradcheck_nondeterministic's NonDetFunc)."""

    @staticmethod
    def forward(ctx, x, jitter=0.0):
        ctx.jitter = jitter
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        noise = 1 + torch.rand_like(grad_output) * ctx.jitter
        return NonDeterministic.apply(grad_output, ctx.jitter) * noise, None


class TwoOutputs(Function):
    """(2x, x²) with gradients left undefined; ``treat_missing`` says what the backward does with a None."""

    @staticmethod
    def forward(ctx, x, treat_missing):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        ctx.treat_missing = treat_missing
        return 2 * x, x * x

    @staticmethod
    def backward(ctx, grad_double, grad_square):
        (x,) = ctx.saved_tensors
        if ctx.treat_missing == "zero":
            grad_double = torch.zeros_like(x) if grad_double is None else grad_double
            grad_square = torch.zeros_like(x) if grad_square is None else grad_square
        elif ctx.treat_missing == "one":  # the bug: a missing gradient taken as ones
            grad_double = torch.ones_like(x) if grad_double is None else grad_double
            grad_square = torch.ones_like(x) if grad_square is None else grad_square
        return 2 * grad_double + 2 * x * grad_square, None


class ClippedScale(Function):
    """3x, whose backward guards against huge gradients with ``.item()`` (fine alone, broken under vmap)."""

    @staticmethod
    def forward(ctx, x, guarded):
        ctx.guarded = guarded
        return 3 * x

    @staticmethod
    def backward(ctx, grad_output):
        if ctx.guarded and grad_output.abs().max().item() > 1e6:
            grad_output = grad_output.clamp(-1e6, 1e6)
        return 3 * grad_output, None


class ComplexSquare(Function):
    """z², with torch's convention grad_z = grad_out · conj(2z); ``conjugated`` forgets the conj."""

    @staticmethod
    def forward(ctx, z, conjugated):
        ctx.save_for_backward(z)
        ctx.conjugated = conjugated
        return z * z

    @staticmethod
    def backward(ctx, grad_output):
        (z,) = ctx.saved_tensors
        derivative = 2 * z if ctx.conjugated else (2 * z).conj()
        return grad_output * derivative, None


class SparseScale(Function):
    """A sparse s ↦ 2·dense(s), whose backward is ``factor``·grad on s's stored pattern (2 is right)."""

    @staticmethod
    def forward(ctx, s, factor):
        ctx.save_for_backward(s)
        ctx.factor = factor
        return 2 * s.to_dense()

    @staticmethod
    def backward(ctx, grad_output):
        (s,) = ctx.saved_tensors
        pattern = s.coalesce() if s.layout == torch.sparse_coo else s
        return (ctx.factor * grad_output).sparse_mask(pattern), None


class ForwardOnly(Function):
    """(x, y) ↦ (x·scale, y) with only a ``jvp`` (test_gradcheck_forward_ad_runs_with_no_requires_grad's UserFn)."""

    @staticmethod
    def forward(ctx, x, y, jvp_scale):
        ctx.jvp_scale = jvp_scale
        return x.clone(), y.clone()

    @staticmethod
    def jvp(ctx, x_tangent, y_tangent, _):
        return x_tangent * ctx.jvp_scale, y_tangent


class Cube(Function):
    """x³ whose derivatives are Functions down to the third: 3x², then 6x, then ``third`` (6 is right)."""

    @staticmethod
    def forward(ctx, x, third):
        ctx.save_for_backward(x)
        ctx.third = third
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * ThreeSquare.apply(x, ctx.third), None


class ThreeSquare(Function):
    @staticmethod
    def forward(ctx, x, third):
        ctx.save_for_backward(x)
        ctx.third = third
        return 3 * x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * Linear.apply(x, ctx.third), None


class Linear(Function):
    @staticmethod
    def forward(ctx, x, slope):
        ctx.slope = slope
        return 6 * x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.slope, None


class SineWithCosine(Function):
    """sin, whose backward is a Function (cos) with a right backward and a ``jvp`` scaled by ``jvp_scale``."""

    @staticmethod
    def forward(ctx, x, jvp_scale):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.jvp_scale = jvp_scale
        return torch.sin(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * Cosine.apply(x, ctx.jvp_scale), None

    @staticmethod
    def jvp(ctx, x_tangent, _):
        (x,) = ctx.saved_tensors
        return x_tangent * torch.cos(x)


class Cosine(Function):
    @staticmethod
    def forward(ctx, x, jvp_scale):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.jvp_scale = jvp_scale
        return torch.cos(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return -grad_output * torch.sin(x), None

    @staticmethod
    def jvp(ctx, x_tangent, _):
        (x,) = ctx.saved_tensors
        return -x_tangent * torch.sin(x) * ctx.jvp_scale


class Sine(Function):
    """sin, whose backward is ``factor``·cos (1 is right)."""

    @staticmethod
    def forward(ctx, x, factor):
        ctx.save_for_backward(x)
        ctx.factor = factor
        return torch.sin(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.cos(x) * ctx.factor, None


class RandomInJvp(Function):
    """2x, whose ``jvp`` draws a random tensor it does not use (test_gradcheck_forward_ad_batched_grad's Fn)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def vjp(ctx, grad_output):
        return grad_output * 2

    @staticmethod
    def jvp(ctx, x_tangent):
        torch.randn_like(x_tangent)
        return x_tangent * 2


class SparseGradient(Function):
    """Identity whose backward returns the gradient as a sparse COO tensor (a layout torch rejects)."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.to_sparse()


def with_hook(hook):
    """``x ↦ x.clone()`` with ``hook`` registered on the clone (how torch's tests reach a backward)."""

    def fn(x):
        y = x.clone()
        y.register_hook(hook)
        return y

    return fn


def raise_if_undefined(grad):
    if grad is None:
        raise RuntimeError("x is undefined")


def clip_and_log(grad):
    """A correct hook: clips at a bound the gradient never reaches (torch's undefined check passes it None)."""
    return None if grad is None else grad.clamp(-1e6, 1e6)


def forward_ad_scaled(x, y):
    """test_gradcheck_forward_ad's bad_fn: (x + y, y), y's tangent scaled by 1.1 inside forward AD."""
    if fwAD._current_level >= 0:
        primal, tangent = fwAD.unpack_dual(y)
        y = fwAD.make_dual(primal, tangent * 1.1)
    return x + y, y


def depends_on_value(kind: str):
    def fn(x):
        if torch.all(x >= 1):
            return torch.cat([x, x]) if kind == "shape" else x.to(torch.float32)
        return x

    return fn


def raising(_x):
    raise RuntimeError("Not a GradcheckError!")


def embedding(weight):
    return torch.nn.functional.embedding(torch.tensor([0, 2, 2, 5]), weight, sparse=True)


# The scenarios, grouped by the features of issue 33's table; one line each, as a table reads.

AUTOGRAD = "test/test_autograd.py::test_gradcheck_"
FUNCTION_DB = "autograd_function_db::"
MASKED = {"masked": True, "check_batched_grad": False}
FORWARD = {"check_forward_ad": True}
ONLY_FORWARD = {**FORWARD, "check_backward_ad": False, "check_undefined_grad": False, "check_batched_grad": False}
FWD_OVER_REV = {"check_fwd_over_rev": True}
MISMATCH = "Jacobian mismatch for output 0 with respect to input 0"
#: torch's undefined-gradient check cannot run a backward that calls sparse_mask: these are asked without it.
SPARSE_FUNCTION = {**MASKED, "check_undefined_grad": False}
COMPLEX64 = {"eps": 1e-3, "atol": 1e-2, "rtol": 1e-2}
BOTH_MODES = {"modes": ("fwd", "rev")}

# fmt: off
ORDERS = [
    Scenario("mul by 5", AUTOGRAD + "single_input", "first order",
             lambda t: t.mul(5), lambda: (tensor(10, 1),), PASSES),
    Scenario("mul by 5, second order", AUTOGRAD + "single_input", "second order",
             lambda t: t.mul(5), lambda: (tensor(10, 1),), PASSES, TorchCheck("gradgradcheck"), {"order": 2}),
    Scenario("cube, right third derivative", "gradgradcheck of a grad function", "third order",
             lambda x: Cube.apply(x, 6.0), lambda: (tensor(4, 2, low=0.5, high=1.5),), PASSES,
             TorchCheck("gradgradcheck", of_gradient=True), {"order": 3}),
    Scenario("cube, wrong third derivative", "gradgradcheck of a grad function", "third order",
             lambda x: Cube.apply(x, 7.0), lambda: (tensor(4, 2, low=0.5, high=1.5),), fails("GradcheckError", MISMATCH),
             TorchCheck("gradgradcheck", of_gradient=True), {"order": 3}),
    Scenario("sine, right forward-over-reverse", "gradgradcheck(check_fwd_over_rev=True)", "forward-over-reverse",
             lambda x: SineWithCosine.apply(x, 1.0), lambda: (tensor(4, 3),), PASSES,
             TorchCheck("gradgradcheck", FWD_OVER_REV), {"order": 2, **BOTH_MODES}),
    Scenario("sine, wrong forward-over-reverse", "gradgradcheck(check_fwd_over_rev=True)", "forward-over-reverse",
             lambda x: SineWithCosine.apply(x, 2.0), lambda: (tensor(4, 3),), fails("GradcheckError", "forward mode"),
             TorchCheck("gradgradcheck", FWD_OVER_REV), {"order": 2, **BOTH_MODES}),
]

FORWARD_MODE = [
    Scenario("(x + y, y), forward and reverse", AUTOGRAD + "forward_ad", "forward mode",
             lambda a, b: (a + b, b), lambda: (tensor(2, 4), tensor(2, 5)), PASSES, TorchCheck(options=FORWARD),
             BOTH_MODES),
    Scenario("(x + y, y), tangent scaled by 1.1", AUTOGRAD + "forward_ad", "forward mode",
             forward_ad_scaled, lambda: (tensor(2, 4), tensor(2, 5)),
             fails("GradcheckError", "Jacobian computed with forward mode mismatch for output 0 with respect to input 1"),
             TorchCheck(options=FORWARD), {"modes": ("fwd",)}),
    Scenario("Function with only a jvp", AUTOGRAD + "forward_ad_runs_with_no_requires_grad", "forward mode",
             lambda a, b: ForwardOnly.apply(a, b, 1.0), lambda: (tensor(2, 4), tensor(2, 5)), PASSES,
             TorchCheck(options=ONLY_FORWARD), {"modes": ("fwd",)}),
    Scenario("Function with only a jvp, ×2", AUTOGRAD + "forward_ad_runs_with_no_requires_grad", "forward mode",
             lambda a, b: ForwardOnly.apply(a, b, 2.0), lambda: (tensor(2, 4), tensor(2, 5)),
             fails("GradcheckError", "Jacobian computed with forward mode mismatch for output 0 with respect to input 0"),
             TorchCheck(options=ONLY_FORWARD), {"modes": ("fwd",)}),
]

COMPLEX = [
    Scenario("z², right Wirtinger backward", "complex autograd Function", "complex inputs (Wirtinger)",
             lambda z: ComplexSquare.apply(z, False), lambda: (tensor(3, 8, torch.complex128),), PASSES),
    Scenario("z², conjugated backward", "complex autograd Function", "complex inputs (Wirtinger)",
             lambda z: ComplexSquare.apply(z, True), lambda: (tensor(3, 8, torch.complex128),),
             fails("GradcheckError", "While considering the imaginary part of complex outputs only")),
    Scenario("1/‖z‖ near 0", AUTOGRAD + "adjusted_atol_complex_inputs", "complex inputs (Wirtinger)",
             lambda z: 1.0 / torch.norm(z), lambda: (small_complex(97),), PASSES,
             TorchCheck(options={"atol": 8.3e-6, "rtol": 1e-9})),
    Scenario("(x + y, y) complex, forward", AUTOGRAD + "forward_ad", "complex inputs (Wirtinger)",
             lambda a, b: (a + b, b), lambda: (tensor(2, 6, torch.complex128), tensor(2, 7, torch.complex128)),
             PASSES, TorchCheck(options=FORWARD), BOTH_MODES),
    Scenario("clone + hook 1e-2, C → C", AUTOGRAD + "jacobian_mismatch", "complex inputs (Wirtinger)",
             with_hook(lambda g: g + 1e-2), lambda: (torch.ones(2, 2, dtype=torch.complex128, requires_grad=True),),
             fails("GradcheckError", "While considering the imaginary part of complex outputs only")),
    Scenario("Re z², conjugated backward (a real output)", "complex autograd Function", "complex inputs (Wirtinger)",
             lambda z: ComplexSquare.apply(z, True).real, lambda: (tensor(4, 40, torch.complex128),),
             fails("GradcheckError", MISMATCH)),
    Scenario("z² in complex64, right backward", "complex autograd Function", "complex inputs (Wirtinger)",
             lambda z: ComplexSquare.apply(z, False), lambda: (tensor(3, 41, torch.complex64),), PASSES,
             TorchCheck(options=COMPLEX64)),
    Scenario("z² in complex64, conjugated backward", "complex autograd Function", "complex inputs (Wirtinger)",
             lambda z: ComplexSquare.apply(z, True), lambda: (tensor(3, 41, torch.complex64),),
             fails("GradcheckError", "While considering the imaginary part of complex outputs only"),
             TorchCheck(options=COMPLEX64)),
    Scenario("complex(sin x, cos x), R → C", "complex output of a real function", "complex outputs",
             lambda x: torch.complex(x.sin(), x.cos()), lambda: (tensor(3, 9),), PASSES),
    Scenario("(complex(x, y), x + 1)", AUTOGRAD + "complex_non_complex_outputs", "mixed complex and real outputs",
             lambda a, b: (torch.complex(a, b), a + 1), lambda: (tensor((2, 2), 10), tensor((2, 2), 11)), PASSES),
    Scenario("(z, real z)", AUTOGRAD + "complex_non_complex_outputs", "mixed complex and real outputs",
             lambda z: (z, torch.real(z)), lambda: (tensor((2, 2), 12, torch.complex128),), PASSES),
]

PRECISION = [
    Scenario("sine in float16, loose tolerances", "gradcheck(eps=1e-2, atol=rtol=5e-2)", "float16",
             lambda x: Sine.apply(x, 1.0), lambda: (tensor(5, 13, torch.float16, low=0.5, high=1.5),), PASSES,
             TorchCheck(options={"eps": 1e-2, "atol": 5e-2, "rtol": 5e-2})),
    Scenario("sine in float16, backward ×2", "gradcheck(eps=1e-2, atol=rtol=5e-2)", "float16",
             lambda x: Sine.apply(x, 2.0), lambda: (tensor(5, 13, torch.float16, low=0.5, high=1.5),),
             fails("GradcheckError", MISMATCH), TorchCheck(options={"eps": 1e-2, "atol": 5e-2, "rtol": 5e-2})),
    Scenario("identity in float32", AUTOGRAD + "validates_inputs", "float32",
             lambda x: x, lambda: (torch.ones(1, dtype=torch.float32, requires_grad=True),), PASSES,
             TorchCheck(options={"atol": 1e-1})),
]

UNDEFINED = [
    Scenario("hook raises on an undefined gradient", AUTOGRAD + "undefined_grad", "undefined output gradient",
             with_hook(raise_if_undefined), lambda: (torch.ones(1, dtype=torch.float64, requires_grad=True),),
             fails("GradcheckError", "Expected backward function to handle undefined output grads")),
    Scenario("(2x, x²), missing gradients as zeros", "set_materialize_grads(False)", "undefined output gradient",
             lambda x: TwoOutputs.apply(x, "zero"), lambda: (tensor(3, 14),), PASSES),
    Scenario("(2x, x²), missing gradients as ones", "set_materialize_grads(False)", "undefined output gradient",
             lambda x: TwoOutputs.apply(x, "one"), lambda: (tensor(3, 14),), fails("GradcheckError", MISMATCH)),
    Scenario("(2x, x²), backward breaks on None", "set_materialize_grads(False)", "undefined output gradient",
             lambda x: TwoOutputs.apply(x, "as is"), lambda: (tensor(3, 14),),
             fails("TypeError", "unsupported operand")),
]

NONDETERMINISTIC = [
    Scenario("identity, deterministic backward", AUTOGRAD + "nondeterministic", "nondeterministic backward",
             lambda x: NonDeterministic.apply(x, 0.0), lambda: (tensor((5, 5), 15),), PASSES),
    Scenario("identity, backward with 1e-12 noise", AUTOGRAD + "nondeterministic", "nondeterministic backward",
             lambda x: NonDeterministic.apply(x, 1e-12), lambda: (tensor((5, 5), 15),),
             fails("GradcheckError", "Backward is not reentrant")),
    Scenario("identity, 1e-12 noise, second order", AUTOGRAD + "nondeterministic", "nondeterministic backward",
             lambda x: NonDeterministic.apply(x, 1e-12), lambda: (tensor((5, 5), 15),),
             fails("GradcheckError", "Backward is not reentrant"), TorchCheck("gradgradcheck"), {"order": 2}),
    Scenario("identity, 1e-6 noise within nondet_tol", AUTOGRAD + "nondeterministic", "nondeterministic backward",
             lambda x: NonDeterministic.apply(x, 1e-6), lambda: (tensor((5, 5), 15),), PASSES,
             TorchCheck(options={"nondet_tol": 1e-5}), {"nondet_tol": 1e-5}),
]

BATCHED = [
    Scenario("3x, plain backward, batched", "check_batched_grad=True", "batched gradients (vmap)",
             lambda x: ClippedScale.apply(x, False), lambda: (tensor(4, 16),), PASSES,
             TorchCheck(options={"check_batched_grad": True}), {"batched": True}),
    Scenario("3x, backward calls .item(), batched", "check_batched_grad=True", "batched gradients (vmap)",
             lambda x: ClippedScale.apply(x, True), lambda: (tensor(4, 16),),
             fails("GradcheckError", "while testing batched gradient"),
             TorchCheck(options={"check_batched_grad": True}), {"batched": True}),
    Scenario("jvp draws random numbers, batched", AUTOGRAD + "forward_ad_batched_grad", "batched gradients (vmap)",
             RandomInJvp.apply, lambda: (tensor(2, 17),),
             fails("GradcheckError", "We do not yet support calling random operations inside of vmap"),
             TorchCheck(options={**FORWARD, "check_batched_forward_grad": True}), {**BOTH_MODES, "batched": True}),
    Scenario("sparse to_dense, batched", AUTOGRAD + "check_batched_grad", "batched gradients (vmap)",
             lambda s: s.to_dense(), lambda: (sparse(torch.sparse_coo, (10,)),),
             fails("GradcheckError", "while testing batched gradient"),
             TorchCheck(options={"masked": True, "check_batched_grad": True}), {"batched": True}),
]

SPARSE = [
    Scenario("sum of a sparse COO input", AUTOGRAD + "input", "sparse inputs (COO/CSR)",
             torch.sum, lambda: (sparse(torch.sparse_coo),), PASSES, TorchCheck(options=MASKED)),
    Scenario("sum of a sparse CSR input", AUTOGRAD + "input", "sparse inputs (COO/CSR)",
             torch.sum, lambda: (sparse(torch.sparse_csr),), PASSES, TorchCheck(options=MASKED)),
    Scenario("to_dense of a sparse COO input", AUTOGRAD + "validates_inputs", "sparse inputs (COO/CSR)",
             lambda s: s.to_dense(), lambda: (sparse(torch.sparse_coo, (10,), 18),), PASSES,
             TorchCheck(options={**MASKED, "atol": 1e-1})),
    Scenario("dense × sparse COO", AUTOGRAD + "dense_and_sparse_inputs", "sparse inputs (COO/CSR)",
             lambda a, b: a * b.coalesce().to_dense(), lambda: (tensor((2, 2), 19), sparse(torch.sparse_coo)),
             PASSES, TorchCheck(options=MASKED)),
    Scenario("to_dense + hook 1e-2, sparse input", AUTOGRAD + "backward_mul_by_grad_output", "sparse inputs (COO/CSR)",
             lambda s: with_hook(lambda g: g + 1e-2)(s.clone().to_dense()),
             lambda: (torch.ones(1, dtype=torch.float64).to_sparse().requires_grad_(),),
             fails("GradcheckError", "backward not multiplied by grad_output"),
             TorchCheck(options={**MASKED, "atol": 1e-1})),
    Scenario("2·dense(s), sparse COO, backward on the pattern", "a sparse autograd Function", "sparse inputs (COO/CSR)",
             lambda s: SparseScale.apply(s, 2.0), lambda: (sparse(torch.sparse_coo, (3, 3), 42),), PASSES,
             TorchCheck(options=SPARSE_FUNCTION)),
    Scenario("2·dense(s), sparse COO, backward ×2", "a sparse autograd Function", "sparse inputs (COO/CSR)",
             lambda s: SparseScale.apply(s, 4.0), lambda: (sparse(torch.sparse_coo, (3, 3), 42),),
             fails("GradcheckError", MISMATCH), TorchCheck(options=SPARSE_FUNCTION)),
    Scenario("2·dense(s), sparse CSR, backward ×2", "a sparse autograd Function", "sparse inputs (COO/CSR)",
             lambda s: SparseScale.apply(s, 4.0), lambda: (sparse(torch.sparse_csr, (3, 3), 43),),
             fails("GradcheckError", MISMATCH), TorchCheck(options=SPARSE_FUNCTION)),
    Scenario("sparse output", AUTOGRAD + "test_outputs", "sparse inputs (COO/CSR)",
             lambda s: s, lambda: (sparse(torch.sparse_coo, (10,), 20),),
             refuses("ValueError", "Sparse output is not supported at gradcheck yet"), TorchCheck(options=MASKED)),
    # A sparse gradient of a dense input: the issue asks for torch's failure named, or a densified check.
    Scenario("nn.Embedding(sparse=True)", "F.embedding(sparse=True)", "sparse gradient of a dense input",
             embedding, lambda: (tensor((6, 3), 21),), fails("GradcheckError", "grad is incorrect layout"),
             accepts=frozenset({"passed"})),
    Scenario("backward returns a sparse gradient", AUTOGRAD + "backward_mul_by_grad_output",
             "sparse gradient of a dense input", SparseGradient.apply, lambda: (tensor(1, 22),),
             fails("GradcheckError", "grad is incorrect layout"), accepts=frozenset({"passed"})),
]

HOOKS = [
    Scenario("clone + clipping hook", "a hook as training code registers it", "tensor hooks",
             with_hook(clip_and_log), lambda: (tensor(4, 23),), PASSES),
    Scenario("clone + hook 1e-2", AUTOGRAD + "jacobian_mismatch", "tensor hooks",
             with_hook(lambda g: g + 1e-2), lambda: (torch.ones(2, 2, dtype=torch.float64, requires_grad=True),),
             fails("GradcheckError", MISMATCH)),
    Scenario("clone + hook 1e-2, within atol", AUTOGRAD + "backward_mul_by_grad_output", "tensor hooks",
             with_hook(lambda g: g + 1e-2), lambda: (torch.ones(1, dtype=torch.float64, requires_grad=True),),
             fails("GradcheckError", "backward not multiplied by grad_output"), TorchCheck(options={"atol": 1e-1})),
]

LAYOUTS = [
    Scenario("to_mkldnn output", AUTOGRAD + "test_outputs", "mkldnn layout",
             lambda x: x.to_mkldnn(), lambda: (tensor((4, 5), 24, torch.float32),),
             refuses("ValueError", "MKLDNN output is not supported at gradcheck yet"),
             TorchCheck(options={"check_batched_grad": False}), accepts=frozenset({"passed"})),
    Scenario("dense + mkldnn input", AUTOGRAD + "multiple_mkldnn_inputs", "mkldnn layout",
             lambda a, b: a + b.to_dense(),
             lambda: (tensor(10, 25, torch.float32), tensor(10, 26, torch.float32, grad=False).to_mkldnn().requires_grad_()),
             PASSES, TorchCheck(options={"atol": 1e-1, "check_batched_grad": False})),
    Scenario("dense + mkldnn input, backward ×2", "an mkldnn input", "mkldnn layout",
             lambda a, b: a + Sine.apply(b.to_dense(), 2.0),
             lambda: (tensor(10, 44, torch.float32), tensor(10, 45, torch.float32, grad=False).to_mkldnn().requires_grad_()),
             fails("GradcheckError", "Jacobian mismatch for output 0 with respect to input 1"),
             TorchCheck(options={"atol": 1e-1, "check_batched_grad": False, "check_undefined_grad": False})),
    Scenario("mkldnn input, forward mode", AUTOGRAD + "validates_input_mkldnn", "mkldnn layout",
             lambda m: m.to_dense(), lambda: (torch.ones(1).to_mkldnn().requires_grad_(),),
             refuses("ValueError", "MKLDNN inputs are not support for forward AD gradcheck"),
             TorchCheck(options={**FORWARD, "atol": 1e-1, "rtol": 1e-1}), BOTH_MODES),
    Scenario("no input requires grad", AUTOGRAD + "validates_inputs", "input validation",
             lambda x: x, lambda: (tensor(10, 27, grad=False),),
             refuses("ValueError", "at least one input tensor to require gradient")),
    Scenario("input with stride 0", AUTOGRAD + "validates_inputs", "input validation",
             lambda x: x, lambda: (torch.ones(1, dtype=torch.float64, requires_grad=True).expand(2, 2),),
             refuses("RuntimeError", "The 0th input has a dimension with stride 0")),
    Scenario("output shape depends on the value", AUTOGRAD + "output_shape_or_dtype_depend_on_values", "input validation",
             depends_on_value("shape"), lambda: (torch.ones(1, dtype=torch.float64, requires_grad=True),),
             refuses("AssertionError", "return outputs with the same shape when inputs are perturbed")),
    Scenario("function raises its own error", AUTOGRAD + "custom_error", "the function's own errors",
             raising, lambda: (tensor((2, 2), 28),), raises("RuntimeError", "Not a GradcheckError!")),
]

OUTPUTS = [
    Scenario("tensor([x]): no differentiable output", AUTOGRAD + "check_no_differentiable_outputs",
             "no differentiable output", lambda x: torch.tensor([x]), lambda: (torch.ones(1, requires_grad=True),),
             fails("GradcheckError", "Numerical gradient for function expected to be zero")),
    Scenario("no outputs at all", AUTOGRAD + "check_no_differentiable_outputs", "no differentiable output",
             lambda x: (), lambda: (torch.ones(1, requires_grad=True),), PASSES),
    Scenario("NumpySort: index outputs; backward permutes, forward not", FUNCTION_DB + "NumpySort",
             "non-differentiable outputs", lambda x: function_db.NumpySort.apply(x, 1), lambda: (tensor((3, 5), 29),),
             fails("GradcheckError", MISMATCH)),
]

FUNCTIONS = [
    Scenario("NumpyCube: (x³, 3x²)", FUNCTION_DB + "NumpyCube", "autograd Functions",
             function_db.NumpyCube.apply, lambda: (tensor(1, 30, low=0.8, high=2.0),), PASSES),
    Scenario("NumpyMul", FUNCTION_DB + "NumpyMul", "autograd Functions",
             function_db.NumpyMul.apply, lambda: (tensor(4, 31), tensor(4, 32)), PASSES),
    Scenario("Select", FUNCTION_DB + "Select", "autograd Functions",
             lambda x: function_db.Select.apply(x, 2), lambda: (tensor((3, 5), 33),), PASSES),
    Scenario("NumpyExp_ (in place, mark_dirty)", FUNCTION_DB + "NumpyExp_", "autograd Functions",
             lambda x: function_db.NumpyExp_.apply(x.clone()), lambda: (tensor(4, 34),), PASSES),
    Scenario("ScaleGradGenVmap: gradient ×3.14", FUNCTION_DB + "ScaleGradGenVmap", "autograd Functions",
             function_db.ScaleGradGenVmap.apply, lambda: (tensor(4, 35),), fails("GradcheckError", MISMATCH)),
    Scenario("CubeGenVmap: backward drops grad_saved", FUNCTION_DB + "CubeGenVmap", "autograd Functions",
             function_db.CubeGenVmap.apply, lambda: (tensor(3, 36, low=0.8, high=2.0),),
             fails("GradcheckError", "Jacobian mismatch for output 0 with respect to input 0")),
    Scenario("ZeroGradientsGenVmap: gradient of the wrong shape", FUNCTION_DB + "ZeroGradientsGenVmap",
             "autograd Functions", function_db.ZeroGradientsGenVmap.apply, lambda: (tensor(4, 37), tensor(4, 38)),
             fails("GradcheckError", MISMATCH)),
]
# fmt: on

SCENARIOS = (
    *ORDERS,
    *FORWARD_MODE,
    *COMPLEX,
    *PRECISION,
    *UNDEFINED,
    *NONDETERMINISTIC,
    *BATCHED,
    *SPARSE,
    *HOOKS,
    *LAYOUTS,
    *OUTPUTS,
    *FUNCTIONS,
)
