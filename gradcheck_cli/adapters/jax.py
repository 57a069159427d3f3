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

Every floating leaf (float64, float32, bfloat16) of the inputs is checked, named by its argument's name
and its pytree path (``params['dense']['kernel']``). A float64 leaf while x64 is off (JAX's default,
which computes it in float32) is refused before the first call.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

import numpy as np

from ..check import Options
from ..core.defaults import SEED
from ..engine.cotangents import cotangent, tangent, tangent_problem
from ..engine.problem import GradientProblem, as_problem
from ..errors import InvalidArgument, InvalidCall, JaxUnavailable, UnsupportedJaxInput, X64Disabled

try:
    import jax  # absolute: the real jax, not this module
    import jax.numpy as jnp
except ModuleNotFoundError as error:
    if error.name not in ("jax", "jaxlib"):
        raise
    raise JaxUnavailable() from error

__all__ = ["function_problem", "forward_problem", "function_problems", "array_problem", "jax_problem"]

_PROBED_DTYPES = ("float64", "float32", "bfloat16")


class _Call:
    """``fn(*args)`` with the checked leaves replaceable: their names, host copies and rebuilding."""

    def __init__(self, fn, inputs):
        if not callable(fn):
            raise InvalidArgument(argument="fn", value=type(fn).__name__, expected="callable")
        self.fn, self.args = fn, _input_tuple(inputs)
        argument_names = _argument_names(fn, len(self.args))
        self.trees, self.names, self.origins, self.places = {}, [], {}, []
        for number in range(len(self.args)):
            paths, tree = jax.tree_util.tree_flatten_with_path(self.args[number])
            leaves = [leaf for _, leaf in paths]
            self.trees[number] = (tree, leaves)
            for position, (path, leaf) in enumerate(paths):
                name = argument_names[number] + jax.tree_util.keystr(path)
                origin = _checked_leaf(name, leaf)
                if origin is not None:
                    self.names.append(name)
                    self.origins[name] = origin
                    self.places.append((number, position))
        if not self.names:
            raise InvalidCall(call="fn(*inputs)", problem="has no floating-point input leaf to check")

    def primals(self) -> list:
        """The checked leaves at their origins, as JAX arrays."""
        return [jnp.array(self.origins[name]) for name in self.names]

    def __call__(self, *leaves):
        """``fn`` with the checked leaves replaced by ``leaves`` (one per name, in order)."""
        args = list(self.args)
        replaced = {number: list(leaves_of) for number, (_, leaves_of) in self.trees.items()}
        for (number, position), leaf in zip(self.places, leaves):
            replaced[number][position] = leaf
        for number, (tree, _) in self.trees.items():
            args[number] = jax.tree_util.tree_unflatten(tree, replaced[number])
        return self.fn(*args)

    def at(self, points: Mapping[str, np.ndarray]):
        """``fn`` with the named leaves at ``points`` (copied into JAX arrays), the others at their origins."""
        return self(*(jnp.array(points.get(name, self.origins[name])) for name in self.names))


def function_problem(fn, inputs, *, seed: int = SEED, order: int = 1) -> GradientProblem:
    """``fn`` at ``inputs`` as a GradientProblem: ⟨u, fn(*inputs)⟩ over their floating leaves.

    Parameters
    ----------
    fn : callable
        Any JAX-differentiable function of ``inputs`` returning a pytree of
        arrays; output leaves that are not floating point are left out of ⟨u, ·⟩.
    inputs : tuple of pytrees
        The arguments, as ``jax.test_util.check_grads(f, args)`` takes them (one array
        stands for a 1-tuple). Leaves that are arrays (JAX or numpy) of float64, float32 or
        bfloat16, or Python floats (JAX's default float dtype), are checked; everything
        else is passed as is (close over what should not be checked).
    seed : int
        The cotangents' seed (:func:`~gradcheck_cli.engine.cotangents.cotangent`).
    order : 1 or 2
        1: the vector-Jacobian product ``jax.vjp(fn, *inputs)[1](u)``. 2: the
        objective is ⟨v, g⟩ with g that product (v = cotangent(shape, k,
        seed + 1) for the k-th checked leaf), the analytic side the vjp of g.

    Returns
    -------
    GradientProblem
        Parameters: writable host copies of the checked leaves, by pytree
        path. Gradients: float64 arrays. The objective rebuilds ``inputs``
        from the copies at every call.

    Raises
    ------
    GradCheckError
        Before ``fn`` is first called, for an input that cannot be checked
        (UnsupportedJaxInput, X64Disabled); for outputs that cannot be
        checked, InvalidCall. Exceptions raised by ``fn`` propagate unchanged.
    """
    if order not in (1, 2):
        raise InvalidCall(call="check_function", problem=f"order must be 1 or 2, got {order!r}")
    call = _Call(fn, inputs)
    outputs, pullback = jax.vjp(call, *call.primals())
    first = _Cotangents(outputs, seed, "fn(*inputs)")
    outer = call
    if order == 2:
        u = first.tree

        def outer(*leaves):
            return jax.vjp(call, *leaves)[1](u)

        outputs, pullback = jax.vjp(outer, *call.primals())
        first = _Cotangents(outputs, seed + 1, "the gradient of ⟨u, fn(*inputs)⟩")
    gradients = dict(zip(call.names, (_host_float64(grad) for grad in pullback(first.tree))))
    parameters = {name: np.array(origin, copy=True) for name, origin in call.origins.items()}

    def objective(_copies):
        return first.inner(outer(*(jnp.array(parameters[name]) for name in call.names)))

    return GradientProblem(objective, parameters, gradients)


def forward_problem(fn, inputs, *, seed: int = SEED) -> GradientProblem:
    """``fn``'s forward rule as a GradientProblem: per checked leaf, ε ↦ ⟨u, fn(x + ε·t)⟩ at ε = 0.

    The tangent t of the k-th checked leaf is
    :func:`~gradcheck_cli.engine.cotangents.tangent` (seed + 1, index k); the
    analytic side is ⟨u, ṫ⟩ with ṫ the output tangent of ``jax.jvp`` along t
    alone. Arguments and errors as :func:`function_problem`'s; each parameter
    is a 0-d ε in its leaf's dtype, named as the leaf.
    """
    call = _Call(fn, inputs)
    primals = call.primals()
    first = _Cotangents(call(*primals), seed, "fn(*inputs)")
    tangents, directional = {}, {}
    for index, name in enumerate(call.names):
        tangents[name] = tangent(call.origins[name], index, seed)
        moved = [jnp.zeros_like(primal) for primal in primals]
        moved[index] = jnp.array(tangents[name].astype(call.origins[name].dtype))
        _, output_tangents = jax.jvp(call, tuple(primals), tuple(moved))
        directional[name] = first.inner(output_tangents)
    return tangent_problem(call.origins, tangents, lambda points: first.inner(call.at(points)), directional)


def array_problem(problem: GradientProblem) -> GradientProblem:
    """A problem whose parameters or gradients are JAX arrays, with writable host copies and float64 arrays.

    The objective is called with the mapping of copies (JAX functions take
    numpy arrays); numpy values are kept as they are.
    """
    parameters = {}
    for name, value in problem.parameters.items():
        parameters[name] = np.array(value, copy=True) if isinstance(value, jax.Array) else value
    gradients = {}
    for name, value in problem.gradients.items():
        gradients[name] = _host_float64(value) if isinstance(value, jax.Array) else value
    user_objective = problem.objective

    def objective(arrays):
        value = user_objective(arrays)
        return np.asarray(value) if isinstance(value, jax.Array) else value

    return GradientProblem(objective, parameters, gradients)


def jax_problem(returned, reference: str = "the problem"):
    """What a problem function returned, as a GradientProblem when it is JAX code; anything else unchanged.

    ``(fn, inputs)`` (``inputs`` a tuple or list of pytrees holding a JAX or numpy array)
    is :func:`function_problem` over every argument, and a GradientProblem or
    ``(objective, parameters, gradients)`` holding JAX arrays :func:`array_problem`.
    """
    if isinstance(returned, (tuple, list)) and len(returned) == 2:
        fn, args = returned
        if callable(fn) and isinstance(args, (tuple, list)) and _holds_an_array(args):
            return function_problem(fn, tuple(args))
        return returned
    if isinstance(returned, GradientProblem) or (isinstance(returned, (tuple, list)) and len(returned) == 3):
        problem = as_problem(returned, reference)
        if any(isinstance(value, jax.Array) for value in (*problem.parameters.values(), *problem.gradients.values())):
            return array_problem(problem)
    return returned


def function_problems(fn, inputs, options: Options) -> dict:
    """The problems a check of ``fn`` at ``inputs`` with ``options`` checks, by mode: ``"rev"`` the vjp
    (:func:`function_problem` of ``options.order``), ``"fwd"`` the jvp (:func:`forward_problem`)."""
    if "fwd" in options.modes and options.order != 1:
        problem = f"checks order={options.order} in reverse mode only, got modes={options.modes!r}"
        raise InvalidCall(call="check_function", problem=problem)
    problems = {}
    for mode in options.modes:  # fwd before rev, as jax.test_util.check_grads checks them
        if mode == "fwd":
            problems[mode] = forward_problem(fn, inputs, seed=options.seed)
        else:
            problems[mode] = function_problem(fn, inputs, seed=options.seed, order=options.order)
    return problems


class _Cotangents:
    """The cotangents of one output pytree: u per floating leaf, float0 zeros for the others."""

    def __init__(self, outputs, seed: int, call_text: str):
        leaves, self.structure = jax.tree_util.tree_flatten(outputs)
        self.call_text = call_text
        self.shapes, self.u, cotangents = [], {}, []
        for index, leaf in enumerate(leaves):
            if not isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
                problem = f"must return a pytree of arrays, got {type(leaf).__name__} as output leaf {index}"
                raise InvalidCall(call=call_text, problem=problem)
            dtype = np.dtype(leaf.dtype)
            self.shapes.append(tuple(leaf.shape))
            if jnp.issubdtype(dtype, jnp.complexfloating):
                problem = f"returned complex output leaf {index} ({dtype}): return its real and imaginary parts"
                raise InvalidCall(call=call_text, problem=problem)
            if jnp.issubdtype(dtype, jnp.floating):
                self.u[index] = cotangent(leaf.shape, index, seed)
                cotangents.append(jnp.array(self.u[index].astype(dtype)))
            else:
                cotangents.append(np.zeros(leaf.shape, dtype=jax.dtypes.float0))
        if not self.u:
            raise InvalidCall(call=call_text, problem="returned no floating-point output")
        self.tree = jax.tree_util.tree_unflatten(self.structure, cotangents)

    def inner(self, outputs) -> float:
        """⟨u, outputs⟩ in float64, after checking that the outputs kept their structure and shapes."""
        leaves, structure = jax.tree_util.tree_flatten(outputs)
        if structure != self.structure:
            raise InvalidCall(call=self.call_text, problem=f"returned {self.structure}, then {structure}")
        total = 0.0
        for index, u in self.u.items():
            values = _host_float64(leaves[index])
            if values.shape != self.shapes[index]:
                problem = f"output leaf {index} had shape {list(self.shapes[index])}, then {list(values.shape)}"
                raise InvalidCall(call=self.call_text, problem=problem)
            total += float(np.sum(values * u))
        return total


def _host_float64(value) -> np.ndarray:
    if getattr(value, "dtype", None) == jax.dtypes.float0:
        return np.zeros(np.shape(value))
    return np.asarray(value).astype(np.float64)


def _input_tuple(inputs) -> tuple:
    """``inputs`` as the tuple of ``fn``'s arguments: a tuple or list as it is, one array as a 1-tuple."""
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs)
    if isinstance(inputs, (jax.Array, np.ndarray, np.generic, float)):
        return (inputs,)
    problem = (
        f"needs inputs as a tuple of pytrees (as jax.test_util.check_grads takes args), got {type(inputs).__name__}"
    )
    raise InvalidCall(call="fn(*inputs)", problem=problem)


def _argument_names(fn, count: int) -> list:
    """Each positional argument's name in ``fn``'s signature (``args[i]`` where it has none)."""
    names = [f"inputs[{index}]" for index in range(count)]
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return names
    for index, parameter in enumerate(parameters[:count]):
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            for rest in range(index, count):
                names[rest] = f"{parameter.name}[{rest - index}]"
            break
        if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            names[index] = parameter.name
    return names


def _checked_leaf(name: str, leaf) -> np.ndarray | None:
    """A host copy of a floating leaf to check, in its dtype; None for a leaf passed as is."""
    if isinstance(leaf, float):
        leaf = jnp.asarray(leaf)
    if not isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
        return None
    dtype = np.dtype(leaf.dtype)
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise UnsupportedJaxInput(input=name, problem=f"has dtype {dtype}; gradcheck checks real inputs")
    if not jnp.issubdtype(dtype, jnp.floating):
        return None
    if dtype.name not in _PROBED_DTYPES:
        problem = f"has dtype {dtype}; gradcheck probes float64, float32 and bfloat16 inputs"
        raise UnsupportedJaxInput(input=name, problem=problem)
    if dtype == np.float64 and jax.dtypes.canonicalize_dtype(np.float64) != np.float64:
        raise X64Disabled(input=name)
    return np.array(leaf, copy=True)


def _holds_an_array(args) -> bool:
    """Whether ``args`` holds a JAX array or a numpy array (both are what a JAX function takes)."""
    return any(isinstance(leaf, (jax.Array, np.ndarray)) for leaf in jax.tree_util.tree_leaves(list(args)))
