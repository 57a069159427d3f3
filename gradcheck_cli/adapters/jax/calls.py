"""How the JAX adapter calls the user's function: its inputs as a tuple of pytrees whose floating leaves
are checked (named by argument and path, held as writable host copies), and the cotangents of its outputs.

Complex leaves are checked as their real and imaginary parts. JAX's convention is the conjugate of
gradcheck's (∂f/∂Re z + i·∂f/∂Im z, torch's): its gradient of a real function of z is
∂f/∂Re z − i·∂f/∂Im z, and the cotangent that pulls ⟨u, y⟩ back through a complex output y is
conj(u). The adapter converts both ways (:func:`host_gradient`, :class:`Cotangents`), so a JAX rule is
checked in JAX's own convention, the user converting nothing (docs/jax.md, "Complex numbers")."""

from __future__ import annotations

import inspect
from collections.abc import Mapping

import numpy as np

from ...engine.complex_parts import real_view
from ...engine.cotangents import complex_cotangent, cotangent
from ...engine.dtypes import nearest_dtype, supported_text
from ...errors import InvalidArgument, InvalidCall, JaxUnavailable, UnsupportedJaxInput, X64Disabled

try:
    import jax  # absolute: the real jax, not this package
    import jax.numpy as jnp
except ModuleNotFoundError as error:
    if error.name not in ("jax", "jaxlib"):
        raise
    raise JaxUnavailable() from error

__all__ = [
    "jax",
    "jnp",
    "Call",
    "Cotangents",
    "host_float64",
    "host_gradient",
    "input_tuple",
    "argument_names",
    "checked_leaf",
    "holds_an_array",
    "PROBED_DTYPES",
]

PROBED_DTYPES = ("float64", "float32", "float16", "bfloat16", "complex128", "complex64")


class Call:
    """``fn(*args)`` with the checked leaves replaceable: their names, host copies and rebuilding."""

    def __init__(self, fn, inputs):
        if not callable(fn):
            raise InvalidArgument(argument="fn", value=type(fn).__name__, expected="callable")
        self.fn, self.args = fn, input_tuple(inputs)
        names_of_arguments = argument_names(fn, len(self.args))
        self.trees, self.names, self.origins, self.places = {}, [], {}, []
        for number in range(len(self.args)):
            paths, tree = jax.tree_util.tree_flatten_with_path(self.args[number])
            leaves = [leaf for _, leaf in paths]
            self.trees[number] = (tree, leaves)
            for position, (path, leaf) in enumerate(paths):
                name = names_of_arguments[number] + jax.tree_util.keystr(path)
                origin = checked_leaf(name, leaf)
                if origin is not None:
                    self.names.append(name)
                    self.origins[name] = origin
                    self.places.append((number, position))
        if not self.names:
            raise InvalidCall(call="fn(*inputs)", problem="has no floating-point input leaf to check")

    def primals(self) -> list:
        """The checked leaves at their origins, as JAX arrays (copies)."""
        return [jnp.array(self.origins[name]) for name in self.names]

    def traced_primals(self) -> list:
        """The checked leaves at their origins as the host arrays they are, for a JAX transformation to
        trace ``fn`` at: JAX takes each as an input of its own, a copy or a view it never writes, so that a
        ``jit`` donating its arguments leaves θ and the inputs as they were; nothing is copied here."""
        return [self.origins[name] for name in self.names]

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


class Cotangents:
    """The cotangents of one output pytree: u per floating leaf (complex for a complex leaf, whose real
    and imaginary parts count as two real outputs; JAX pulls it back as conj(u)), float0 zeros for the others."""

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
                self.u[index] = complex_cotangent(leaf.shape, index, seed)
                cotangents.append(jnp.array(np.conj(self.u[index]).astype(dtype)))
            elif jnp.issubdtype(dtype, jnp.floating):
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
            values = host_float64(leaves[index])
            if values.shape != self.shapes[index]:
                problem = f"output leaf {index} had shape {list(self.shapes[index])}, then {list(values.shape)}"
                raise InvalidCall(call=self.call_text, problem=problem)
            total += float(np.sum(real_view(values) * real_view(u)))
        return total


def host_float64(value) -> np.ndarray:
    """A JAX value on the host as float64 (complex128 for a complex one); a float0 is zeros."""
    if getattr(value, "dtype", None) == jax.dtypes.float0:
        return np.zeros(np.shape(value))
    value = np.asarray(value)  # a float64 one as it is (JAX's read-only host view): only read
    return value.astype(np.complex128 if value.dtype.kind == "c" else np.float64, copy=False)


def host_gradient(value) -> np.ndarray:
    """JAX's gradient of a leaf in gradcheck's convention: a complex one conjugated (module docstring)."""
    value = host_float64(value)
    return np.conj(value) if value.dtype.kind == "c" else value


def input_tuple(inputs) -> tuple:
    """``inputs`` as the tuple of ``fn``'s arguments: a tuple or list as it is, one array as a 1-tuple."""
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs)
    if isinstance(inputs, (jax.Array, np.ndarray, np.generic, float)):
        return (inputs,)
    problem = (
        f"needs inputs as a tuple of pytrees (as jax.test_util.check_grads takes args), got {type(inputs).__name__}"
    )
    raise InvalidCall(call="fn(*inputs)", problem=problem)


def argument_names(fn, count: int) -> list:
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


def checked_leaf(name: str, leaf) -> np.ndarray | None:
    """A host copy of a floating leaf to check, in its dtype (never written); None for a leaf passed as is."""
    if isinstance(leaf, float):
        leaf = jnp.asarray(leaf)
    if not isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
        return None
    dtype = np.dtype(leaf.dtype)
    if not (jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.complexfloating)):
        return None
    if dtype.name not in PROBED_DTYPES:
        nearest = nearest_dtype(dtype.name)
        problem = f"has dtype {dtype}; gradcheck probes {supported_text()} inputs; the nearest is {nearest}: pass .astype({nearest!r})"
        raise UnsupportedJaxInput(input=name, problem=problem)
    if dtype.name in ("float64", "complex128") and jax.dtypes.canonicalize_dtype(dtype) != dtype:
        raise X64Disabled(input=name, dtype=dtype.name)
    if isinstance(leaf, jax.Array):  # immutable: its host view (read-only; a copy off the CPU) is θ for good
        return np.asarray(leaf)
    origin = np.array(leaf, copy=True)
    origin.flags.writeable = False  # θ for good, as a JAX leaf's view is
    return origin


def holds_an_array(args) -> bool:
    """Whether ``args`` holds a JAX array or a numpy array (both are what a JAX function takes)."""
    return any(isinstance(leaf, (jax.Array, np.ndarray)) for leaf in jax.tree_util.tree_leaves(list(args)))
