"""JAX code as gradient problems, for :mod:`gradcheck_cli.jax` (the public face) to check:
``custom_vjp`` and ``custom_jvp`` rules, jitted or not, over pytrees.

JAX arrays are immutable, so the parameters are writable host copies of the checked leaves, in their
own dtype: the objective rebuilds the inputs from them at every call, and nothing of the user's is
modified. The user's guide is docs/jax.md.

* :func:`function_problem`: ``fn(*inputs)`` returns a pytree of arrays; the objective is ⟨u,
  fn(*inputs)⟩ in float64 (u from :func:`~gradcheck_cli.engine.cotangents.cotangent`, per output leaf),
  the analytic side ``jax.vjp`` with the same u; ``order=2`` the vjp-of-vjp, the gradient of
  ⟨v, ∇⟨u, fn⟩⟩.
* :func:`forward_problem`: the forward rule (``jax.jvp``) along a deterministic tangent per input leaf,
  against the central difference along it. :func:`function_problems` picks them by order and modes.
* :func:`jax_problem`: what ``gradcheck check FILE.py:FUNCTION`` does with a returned ``(fn, inputs)``,
  or a problem whose parameters are JAX arrays (:func:`array_problem`).

Every floating leaf (float64, float32, float16, bfloat16; complex128 and complex64 as their real and
imaginary parts, in JAX's own convention) of the inputs is checked, named by its argument's name
and its pytree path (``params['dense']['kernel']``). A float64 leaf while x64 is off (JAX's default,
which computes it in float32) is refused before the first call.
"""

from .problems import array_problem, forward_problem, function_problem, function_problems, jax_problem

__all__ = ["function_problem", "forward_problem", "function_problems", "array_problem", "jax_problem"]
