"""Numpy views of torch tensors' own memory, in their own dtype, for :mod:`gradcheck_cli.adapters.torch` to probe.

A view is refused with a typed error where a probe through it would be wrong or unsafe: a tensor
off the CPU, not dense, of a dtype gradcheck does not probe, with elements sharing memory, or over
read-only memory.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

import numpy as np

from ...engine.problem import reject_shared_memory
from ...engine.tensors import strides_may_overlap, writable_memory
from ...errors import SharedMemory, TorchUnavailable, UnsupportedDevice, UnsupportedTensor

try:
    import torch  # absolute: the real torch, not gradcheck_cli.adapters.torch
except ModuleNotFoundError as error:
    if error.name != "torch":
        raise
    raise TorchUnavailable() from error

__all__ = ["torch", "gradient_array", "same_bits", "require_cpu", "probe_views", "probe_view", "memory_view"]

PROBED_DTYPES = {torch.float64: "float64", torch.float32: "float32", torch.bfloat16: "bfloat16"}
# Integer dtypes of each element size, to look at any tensor's memory through numpy.
SAME_SIZE_INTEGER = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def gradient_array(grad, tensor) -> np.ndarray:
    """Autograd's gradient as a float64 array; None (unused) is zero, a sparse one dense (``nn.Embedding(sparse=True)``)."""
    if grad is None:
        return np.zeros(tuple(tensor.shape))
    if grad.layout != torch.strided:
        grad = grad.to_dense()
    return grad.detach().to(torch.float64).numpy()


def same_bits(tensor, other) -> bool:
    integer = SAME_SIZE_INTEGER.get(tensor.element_size())
    if integer is None or tensor.dtype == torch.bool:
        return torch.equal(tensor, other)
    return torch.equal(tensor.view(integer), other.view(integer))


def require_cpu(name: str, tensor) -> None:
    if tensor.device.type != "cpu":
        raise UnsupportedDevice(tensor=name, device=str(tensor.device))


def probe_views(checked: Mapping, everything: Mapping) -> dict:
    """Writable numpy views of the ``checked`` tensors, after checking ``everything`` the call reads.

    Every tensor must be on the CPU, and no checked tensor may share memory
    with another dense tensor of ``everything`` (SharedMemory, the pair
    in ``everything``'s order).
    """
    for name, tensor in everything.items():
        require_cpu(name, tensor)
    views = {name: probe_view(name, tensor) for name, tensor in checked.items()}
    memory = {}
    for name, tensor in everything.items():
        if name in views:
            memory[name] = views[name]
        elif tensor.layout == torch.strided:
            memory[name] = memory_view(name, tensor)
    try:
        reject_shared_memory(memory, list(checked))
    except SharedMemory as error:
        raise SharedMemory(role="tensors", first=error.first, second=error.second) from None
    return views


def probe_view(name: str, tensor) -> np.ndarray:
    """A writable numpy view of ``tensor``'s own memory, in its own dtype (bfloat16 through ml_dtypes)."""
    if tensor.dtype not in PROBED_DTYPES:
        problem = f"has dtype {tensor.dtype}; gradcheck probes float64, float32 and bfloat16 tensors"
        raise UnsupportedTensor(tensor=name, problem=problem)
    if tensor.layout != torch.strided:
        problem = f"has layout {tensor.layout}; gradcheck probes dense (strided) tensors"
        raise UnsupportedTensor(tensor=name, problem=problem)
    if may_overlap_itself(tensor):
        problem = (
            "has elements that may share memory (an expand() or as_strided view): perturbing one "
            "would perturb others; pass a .clone()"
        )
        raise UnsupportedTensor(tensor=name, problem=problem)
    view = memory_view(name, tensor)
    if not writable_memory(view):  # torch has no read-only tensors: a write there is a segmentation fault
        problem = "is over read-only memory (a read-only mmap, np.load(..., mmap_mode='r')): pass a .clone()"
        raise UnsupportedTensor(tensor=name, problem=problem)
    if tensor.dtype != torch.bfloat16:
        return view
    try:
        ml_dtypes = importlib.import_module("ml_dtypes")
    except ImportError:
        problem = "has dtype torch.bfloat16, which needs ml_dtypes (not installed): pip install -e '.[bfloat16]'"
        raise UnsupportedTensor(tensor=name, problem=problem) from None
    return memory_view(name, tensor.detach().view(torch.int16)).view(ml_dtypes.bfloat16)


def memory_view(name: str, tensor) -> np.ndarray:
    """A numpy view of ``tensor``'s memory: its own dtype where numpy has it, else integers of its size."""
    detached = tensor.detach()
    try:
        return detached.numpy()
    except (RuntimeError, TypeError):
        pass
    try:
        return detached.view(SAME_SIZE_INTEGER[detached.element_size()]).numpy()
    except (RuntimeError, TypeError, KeyError) as error:
        message = " ".join(str(error).split())
        raise UnsupportedTensor(tensor=name, problem=f"has no numpy view of its memory: {message}") from None


def may_overlap_itself(tensor) -> bool:
    """Whether two elements may share memory (strides in elements)."""
    return strides_may_overlap(tensor.shape, tensor.stride(), 1)
