"""The outputs' side of ⟨u, fn(x)⟩ in torch: each output's cotangent u and the inner product in float64.

A complex output's u is complex (:func:`~gradcheck_cli.engine.cotangents.complex_cotangent`), and
⟨u, y⟩ = Σ Re u·Re y + Im u·Im y: its real and imaginary parts are checked as two real outputs, as
torch's gradcheck checks them. autograd takes that u as the output's gradient as it is: for a real loss
L, torch's gradient of a complex tensor is ∂L/∂Re + i·∂L/∂Im (docs/method.md, "Complex numbers").
"""

from __future__ import annotations

from ...engine.cotangents import complex_cotangent, cotangent
from .views import torch

__all__ = ["output_cotangent", "real_inner", "inner_product"]


def output_cotangent(output, index: int, seed: int):
    """u of output ``index``: float64, or complex128 for a complex output (its dtype's is exact: 8 bits)."""
    shape = tuple(output.shape)
    if output.is_complex():
        return torch.from_numpy(complex_cotangent(shape, index, seed))
    return torch.from_numpy(cotangent(shape, index, seed))


def real_inner(values, u):
    """⟨u, values⟩ as a float64 tensor that autograd can differentiate: Σ Re u·Re v + Im u·Im v for complex."""
    if values.is_complex() or u.is_complex():
        wide = values.to(torch.complex128).resolve_conj().resolve_neg()
        return torch.sum(torch.view_as_real(wide) * torch.view_as_real(u.to(torch.complex128)))
    return torch.sum(values.to(torch.float64) * u)


def inner_product(values, u) -> float:
    """:func:`real_inner` of the detached values, as a float."""
    return float(real_inner(values.detach(), u))
