"""Numpy views of torch tensors' own memory, in their own dtype, for :mod:`gradcheck_cli.adapters.torch` to probe.

A dense tensor is viewed whole (a complex one as its complex array, checked as its real and imaginary
parts); a sparse COO or CSR tensor through its stored values (torch's ``masked=True``: the unstored
zeros are no coordinates); an mkldnn tensor, where the caller asks for it, through a dense copy that
the objective writes into the tensor before each call. A view is refused with a typed error where a
probe through it would be wrong or unsafe: a tensor off the CPU, of another layout, of a dtype gradcheck
does not probe, a lazily conjugated or negated view, with elements sharing memory, or over read-only
memory.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Mapping

import numpy as np

from ...core.installs import INSTALL
from ...engine.dtypes import nearest_dtype, supported_text
from ...engine.problem import reject_shared_memory
from ...engine.tensors import strides_may_overlap, writable_memory
from ...errors import SharedMemory, TorchUnavailable, UnsupportedDevice, UnsupportedTensor

try:
    import torch  # absolute: the real torch, not gradcheck_cli.adapters.torch
except ModuleNotFoundError as error:
    if error.name != "torch":
        raise
    raise TorchUnavailable() from error

__all__ = [
    "torch",
    "gradient_array",
    "same_bits",
    "require_cpu",
    "probe_views",
    "probe_view",
    "memory_view",
    "dense_copies",
    "written",
    "refuse_dense_check",
    "refuse_other_layouts",
]

PROBED_DTYPES = {
    torch.float64: "float64",
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.complex128: "complex128",
    torch.complex64: "complex64",
}
#: The sparse layouts checked on their stored values (a CSR tensor of two dimensions).
SPARSE_LAYOUTS = (torch.sparse_coo, torch.sparse_csr)
# Integer dtypes of each element size, to look at any tensor's memory through numpy.
SAME_SIZE_INTEGER = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def gradient_array(grad, tensor) -> np.ndarray:
    """Autograd's gradient of ``tensor`` as a float64 array (complex128 for a complex tensor), in the
    shape of what is probed: the stored values of a sparse tensor, read off the gradient (sparse or
    dense) at their indices; None (unused) is zero."""
    wide = torch.complex128 if tensor.is_complex() else torch.float64
    if grad is None:
        shape = _stored_values(tensor).shape if tensor.layout in SPARSE_LAYOUTS else tensor.shape
        return np.zeros(tuple(shape), dtype=np.complex128 if tensor.is_complex() else np.float64)
    grad = grad.detach()
    if grad.layout != torch.strided:
        grad = grad.to_dense()
    if tensor.layout in SPARSE_LAYOUTS:
        grad = grad[_stored_indices(tensor)]
    return grad.resolve_conj().resolve_neg().to(wide).numpy()


def same_bits(tensor, other) -> bool:
    integer = SAME_SIZE_INTEGER.get(tensor.element_size())
    if integer is None or tensor.dtype == torch.bool:
        return torch.equal(tensor, other)
    return torch.equal(tensor.view(integer), other.view(integer))


def require_cpu(name: str, tensor) -> None:
    if tensor.device.type != "cpu":
        raise UnsupportedDevice(tensor=name, device=str(tensor.device))


def probe_views(checked: Mapping, everything: Mapping, dense_copies: bool = False) -> dict:
    """Writable numpy views of the ``checked`` tensors, after checking ``everything`` the call reads.

    Every tensor must be on the CPU, and no checked tensor may share memory
    with another dense tensor of ``everything`` (SharedMemory, the pair
    in ``everything``'s order). With ``dense_copies``, an mkldnn tensor's
    view is of a dense copy, which the caller writes into it before each
    call (:func:`dense_copies`); else an mkldnn tensor is refused.
    """
    for name, tensor in everything.items():
        require_cpu(name, tensor)
    views = {name: probe_view(name, tensor, dense_copies) for name, tensor in checked.items()}
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


def probe_view(name: str, tensor, dense_copies: bool = False) -> np.ndarray:
    """A writable numpy view of ``tensor``'s own memory, in its own dtype (bfloat16 through ml_dtypes):
    a sparse tensor's stored values, with ``dense_copies`` an mkldnn tensor's dense copy."""
    if tensor.dtype not in PROBED_DTYPES:
        nearest = nearest_dtype(str(tensor.dtype))
        problem = f"has dtype {tensor.dtype}; gradcheck probes {supported_text()} tensors; the nearest is {nearest}: pass .to(torch.{nearest})"
        raise UnsupportedTensor(tensor=name, problem=problem)
    if tensor.layout == torch._mkldnn and dense_copies:
        return tensor.detach().to_dense().numpy()  # a fresh tensor, kept alive by its view
    if tensor.layout in SPARSE_LAYOUTS:
        tensor = _stored_values(tensor, name)
    elif tensor.layout != torch.strided:
        problem = f"has layout {tensor.layout}; {_LAYOUTS}"
        raise UnsupportedTensor(tensor=name, problem=problem)
    if tensor.is_conj() or tensor.is_neg():
        problem = "is a lazily conjugated or negated view (conj() of a complex tensor): pass .resolve_conj()"
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
        problem = f"has dtype torch.bfloat16, which needs ml_dtypes (not installed): {INSTALL['ml_dtypes']}"
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


_LAYOUTS = (
    "gradcheck probes dense (strided) tensors, sparse COO and two-dimensional CSR tensors (their stored "
    "values) and, in check_function's reverse mode, mkldnn tensors (a dense copy): pass .to_dense() or "
    ".to_sparse_coo()"
)


def _stored_values(tensor, name: str = "the tensor"):
    """The values a sparse COO or two-dimensional CSR tensor stores, a tensor over the same memory."""
    if tensor.layout == torch.sparse_coo:
        return tensor.detach()._values()
    if tensor.dim() != 2 or tensor.values().dim() != 1:
        problem = f"is a {tensor.dim()}-dimensional or hybrid CSR tensor; {_LAYOUTS}"
        raise UnsupportedTensor(tensor=name, problem=problem)
    return tensor.detach().values()


def _stored_indices(tensor) -> tuple:
    """Where a sparse tensor's stored values are, as index tensors (one per sparse dimension)."""
    if tensor.layout == torch.sparse_coo:
        return tuple(tensor._indices())
    rows = torch.repeat_interleave(torch.arange(tensor.shape[0]), tensor.crow_indices().diff())
    return rows, tensor.col_indices()


def dense_copies(checked: Mapping, views: Mapping) -> dict:
    """name → (the mkldnn tensor, its dense copy's view) for the checked mkldnn tensors (see :func:`probe_views`)."""
    return {name: (tensor, views[name]) for name, tensor in checked.items() if tensor.layout == torch._mkldnn}


@contextlib.contextmanager
def written(copies: dict):
    """Each mkldnn input holding its dense copy's values (the probe) during the call, its own afterwards;
    one whose copy holds its own values is not written (a write bumps its version, and a backward
    through the call at θ needs the version it saved)."""
    moved = [
        (tensor, view)
        for tensor, view in copies.values()
        if not np.array_equal(tensor.detach().to_dense().numpy(), view)
    ]
    saved = [(tensor, tensor.detach().clone()) for tensor, _ in moved]
    try:
        for tensor, view in moved:
            tensor.detach().copy_(torch.from_numpy(view).to_mkldnn())
        yield
    finally:
        for tensor, original in saved:
            tensor.detach().copy_(original)


def refuse_dense_check(tensors: Mapping) -> None:
    """With ``masked=False`` (the derivative at a sparse tensor's unstored elements too), a sparse tensor to
    check is refused: a probe there would have to store the element, changing the tensor's layout and
    what ``fn`` computes."""
    for name, tensor in tensors.items():
        if isinstance(tensor, torch.Tensor) and tensor.requires_grad and tensor.layout in SPARSE_LAYOUTS:
            problem = (
                f"is {tensor.layout}: masked=False asks for the derivative at its unstored elements too, which "
                "no probe can reach without storing them (a new layout); check its stored values (masked=True, "
                "the default) or pass .to_dense()"
            )
            raise UnsupportedTensor(tensor=name, problem=problem)


def refuse_other_layouts(checked: Mapping, check: str, instead: str) -> None:
    """A sparse input where only dense ones are checked (forward mode's tangents and the double backward's
    directions are dense) is refused, naming the ``check`` and what checks it ``instead``."""
    for name, tensor in checked.items():
        if tensor.layout != torch.strided:
            problem = (
                f"has layout {tensor.layout}, which {check} does not check: check it {instead} or pass .to_dense()"
            )
            raise UnsupportedTensor(tensor=name, problem=problem)


def may_overlap_itself(tensor) -> bool:
    """Whether two elements may share memory (strides in elements)."""
    return strides_may_overlap(tensor.shape, tensor.stride(), 1)
