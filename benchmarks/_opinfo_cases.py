"""OpInfo sample inputs as gradient problems: the torch side of `opinfo.py`.

A case is one sample input of one op in one dtype. Its objective is
f(θ) = Σ_k ⟨u_k, out_k(θ)⟩ over the op's floating differentiable outputs,
with a fixed cotangent u_k (standard normal from a seeded numpy generator,
rounded to float32 so that the float32 vector-Jacobian product and the
float64 objective use the same u), summed in float64. Its parameters are
numpy views of the sample's own input tensors, so gradcheck's in-place
probes are what torch reads; its analytic gradient is autograd's
vector-Jacobian product with the same u.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field

import numpy as np
import torch

#: Names of ops whose forward draws random numbers or that need a sparse layout.
SKIPPED_NAME_PARTS = ("rand", "dropout", "bernoulli", "multinomial", "fractional_max_pool", "lowrank", "sparse")
SKIPPED_NAMES = ("normal", "normal.number_mean")
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def full_name(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def stable_seed(*parts) -> int:
    """A seed that does not depend on Python's hash randomization."""
    return zlib.crc32(":".join(str(part) for part in parts).encode())


def op_skip_reason(op, dtype) -> str | None:
    """Why ``op`` is out of scope for ``dtype`` (None when it is in)."""
    name = full_name(op)
    if not op.supports_autograd:
        return "no autograd"
    if any(part in name for part in SKIPPED_NAME_PARTS) or name in SKIPPED_NAMES:
        return "random or sparse by name"
    if op.is_factory_function:
        return "factory function"
    if getattr(op, "has_nondeterministic_output", False):
        return "nondeterministic output"
    supported = op.supported_backward_dtypes("cpu")
    # The smooth-point rule runs torch.autograd.gradcheck on a float64 copy, so float64 is needed too.
    if dtype not in supported or torch.float64 not in supported:
        return f"no backward in {dtype} and float64"
    return None


@dataclass
class Case:
    """One sample of one op in one dtype, ready to check."""

    op_name: str
    sample_index: int
    dtype: str
    call: object  # () -> the op's processed output, from the current values of the sample's tensors
    inputs: list  # the differentiable tensors, in traversal order of (input, *args)
    names: list  # "input", "args[1]", "args[0][2]", ...
    output_positions: list  # indices into the flattened output of the floating differentiable outputs
    cotangents: list  # float64 torch tensors, one per differentiable output
    rebuild: object  # tensors -> (input, args, kwargs) with the differentiable tensors replaced
    sample: object
    op: object
    parameters: dict = field(default_factory=dict)
    gradients: dict = field(default_factory=dict)
    center_seconds: float = 0.0

    @property
    def elements(self) -> int:
        return sum(tensor.numel() for tensor in self.inputs)

    def objective_value(self, outputs) -> float:
        """f from the op's raw output: Σ ⟨u_k, out_k⟩ in float64."""
        flat = flatten_outputs(outputs)
        return float(sum((flat[k].double() * u).sum().item() for k, u in zip(self.output_positions, self.cotangents)))

    def objective(self, _parameters) -> float:
        with torch.no_grad():
            return self.objective_value(self.call())


def flatten_outputs(outputs) -> list:
    """Every tensor in a (nested) output, in order; non-tensors dropped."""
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, (list, tuple)):
        return [tensor for item in outputs for tensor in flatten_outputs(item)]
    return []


def _tensor_slots(value, path: str, found: list):
    """Collect (path, tensor) for every tensor in a value or nested list/tuple of them."""
    if isinstance(value, torch.Tensor):
        found.append((path, value))
    elif isinstance(value, (list, tuple)):
        for position, item in enumerate(value):
            _tensor_slots(item, f"{path}[{position}]", found)


def _substituted(value, replacements: dict, cast):
    """``value`` with tensors replaced by ``replacements[id]`` (others passed through ``cast``)."""
    if isinstance(value, torch.Tensor):
        return replacements[id(value)] if id(value) in replacements else cast(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_substituted(item, replacements, cast) for item in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_substituted(item, replacements, cast) for item in value)
    return value


def _differentiable(tensor) -> bool:
    return tensor.requires_grad and tensor.dtype.is_floating_point and tensor.layout == torch.strided


def _numpy_view(tensor):
    """A numpy array sharing memory with ``tensor``, or None when there is no such view to probe."""
    if any(stride == 0 and size > 1 for stride, size in zip(tensor.stride(), tensor.shape)):
        return None  # an expanded tensor: one memory cell stands for several coordinates
    try:
        view = tensor.detach().numpy()
    except (RuntimeError, TypeError):
        return None
    if tensor.numel() and view.__array_interface__["data"][0] != tensor.data_ptr():
        return None
    return view


def build_case(op, sample, sample_index: int, dtype: str, seed: int):
    """A :class:`Case`, or a string saying why this sample is skipped."""
    slots = []
    _tensor_slots(sample.input, "input", slots)
    _tensor_slots(list(sample.args), "args", slots)
    chosen, seen = [], set()
    for path, tensor in slots:
        if _differentiable(tensor) and id(tensor) not in seen:
            seen.add(id(tensor))
            chosen.append((path, tensor))
    if not chosen:
        return "no differentiable input"
    if any(tensor.numel() == 0 for _, tensor in chosen):
        return "an empty differentiable input"
    wrapper, function = op.gradcheck_wrapper, op.get_op()
    process = sample.output_process_fn_grad

    def rebuild(tensors, cast=lambda tensor: tensor):
        replacements = {id(original): new for (_, original), new in zip(chosen, tensors)}
        arguments = _substituted((sample.input, *sample.args), replacements, cast)
        kwargs = {key: _substituted(value, {}, cast) for key, value in sample.kwargs.items()}
        return arguments, kwargs

    def call():
        return process(wrapper(function, sample.input, *sample.args, **sample.kwargs))

    outputs = call()
    with torch.no_grad():  # timed on a second call: the first one may pay for lazy initialization
        started = time.perf_counter()
        call()
        center_seconds = time.perf_counter() - started
    flat = flatten_outputs(outputs)
    positions = [k for k, out in enumerate(flat) if out.dtype.is_floating_point and out.requires_grad]
    if not positions:
        return "no floating differentiable output"
    random = np.random.default_rng(stable_seed(seed, full_name(op), sample_index, dtype))
    cotangents = [
        torch.from_numpy(random.standard_normal(flat[k].shape).astype(np.float32).astype(np.float64)) for k in positions
    ]
    case = Case(
        op_name=full_name(op),
        sample_index=sample_index,
        dtype=dtype,
        call=call,
        inputs=[tensor for _, tensor in chosen],
        names=[path for path, _ in chosen],
        output_positions=positions,
        cotangents=cotangents,
        rebuild=rebuild,
        sample=sample,
        op=op,
        center_seconds=center_seconds,
    )
    return _with_arrays(case, flat)


def _with_arrays(case: Case, flat: list):
    """Attach the numpy parameter views and autograd's gradients, or say why not."""
    views = [_numpy_view(tensor) for tensor in case.inputs]
    if any(view is None for view in views):
        return "an input has no numpy view of its own memory (expanded, conjugate or negative view)"
    for i, first in enumerate(views):
        for second in views[i + 1 :]:
            if np.shares_memory(first, second):
                return "two differentiable inputs share memory"
    outputs = [flat[k] for k in case.output_positions]
    grad_outputs = [u.to(out.dtype) for u, out in zip(case.cotangents, outputs)]
    try:
        gradients = torch.autograd.grad(outputs, case.inputs, grad_outputs=grad_outputs, allow_unused=True)
    except RuntimeError as error:
        return f"autograd raised: {str(error).splitlines()[0][:120]}"
    case.parameters = dict(zip(case.names, views))
    case.gradients = {
        name: np.zeros(tensor.shape) if gradient is None else gradient.detach().double().numpy(force=True).copy()
        for name, tensor, gradient in zip(case.names, case.inputs, gradients)
    }
    return case


def cases_of(op, dtype: str, seed: int, max_samples: int, max_elements: int, scan: int = 40):
    """Up to ``max_samples`` cases of ``op`` in ``dtype``, and the reasons samples were skipped."""
    torch.manual_seed(stable_seed(seed, full_name(op), dtype))
    cases, skipped = [], []
    try:
        samples = op.sample_inputs(device="cpu", dtype=DTYPES[dtype], requires_grad=True)
        for index, sample in enumerate(samples):
            if len(cases) >= max_samples or index >= scan:
                break
            elements = sum(t.numel() for _, t in _slots_of(sample) if _differentiable(t))
            if elements > max_elements:
                skipped.append(f"more than {max_elements} input elements")
                continue
            built = build_case(op, sample, index, dtype, seed)
            (cases if isinstance(built, Case) else skipped).append(built)
    except Exception as error:  # an OpInfo sample generator or op that fails here is out of scope
        skipped.append(
            f"sample inputs raised {type(error).__name__}: {str(error).splitlines()[0][:120] if str(error) else ''}"
        )
    return cases, skipped


def _slots_of(sample) -> list:
    slots = []
    _tensor_slots(sample.input, "input", slots)
    _tensor_slots(list(sample.args), "args", slots)
    return slots


def _as_float64(tensor):
    return tensor.double() if tensor.dtype.is_floating_point else tensor


class _ScalarObjective(torch.autograd.Function):
    """f(θ) as one torch function whose backward is a given (possibly mutated) gradient."""

    @staticmethod
    def forward(ctx, runner, *tensors):
        ctx.runner = runner
        return torch.tensor(runner.value(tensors), dtype=torch.float64)

    @staticmethod
    def backward(ctx, grad_output):
        return (None, *(grad_output * gradient for gradient in ctx.runner.gradients))


#: torch.autograd.gradcheck's defaults: |a − n| ≤ atol + rtol·|n| for every entry.
TORCH_ATOL, TORCH_RTOL = 1e-5, 1e-3


class TorchSide:
    """torch.autograd.gradcheck's view of a case, on a float64 copy of its inputs.

    The function is the case's own objective (the op with the same
    cotangent, summed in float64). :meth:`gradcheck` runs
    ``torch.autograd.gradcheck`` for real with a given analytic gradient
    (through a torch.autograd.Function whose backward returns it) and counts
    its forward calls. :meth:`probe` makes torch's own central differences
    f(x ± eps) coordinate by coordinate, as its slow mode does (x − eps and
    x + eps in float64, divided by 2·eps), so that its verdict on any other
    gradient is :func:`torch_verdict` of the same numbers — what a rerun of
    gradcheck would say, since the forward is deterministic.
    """

    def __init__(self, case: Case):
        self.case = case
        self.inputs = [tensor.detach().double().contiguous().clone() for tensor in case.inputs]
        self.gradients = []
        self.evaluations = 0

    def value(self, tensors) -> float:
        """f at ``tensors`` (float64 tensors standing for the case's differentiable inputs)."""
        return self._evaluate(*self.case.rebuild([tensor.detach() for tensor in tensors], _as_float64))

    def _evaluate(self, arguments, kwargs) -> float:
        self.evaluations += 1
        case = self.case
        with torch.no_grad():
            outputs = case.sample.output_process_fn_grad(
                case.op.gradcheck_wrapper(case.op.get_op(), *arguments, **kwargs)
            )
        return case.objective_value(outputs)

    def reference_gradient(self) -> dict:
        """Autograd's gradient of f at the float64 copy (for a float32 case, the float64 reference)."""
        inputs = [tensor.clone().requires_grad_(True) for tensor in self.inputs]
        arguments, kwargs = self.case.rebuild(inputs, _as_float64)
        case = self.case
        flat = flatten_outputs(
            case.sample.output_process_fn_grad(case.op.gradcheck_wrapper(case.op.get_op(), *arguments, **kwargs))
        )
        outputs = [flat[k] for k in case.output_positions]
        gradients = torch.autograd.grad(outputs, inputs, grad_outputs=case.cotangents, allow_unused=True)
        return {
            name: np.zeros(tensor.shape)
            if gradient is None
            else gradient.detach().numpy(force=True).reshape(tensor.shape)
            for name, tensor, gradient in zip(case.names, self.inputs, gradients)
        }

    def probe(self, eps: float) -> tuple:
        """(f(x − eps·e_i), f(x), f(x + eps·e_i)) for every coordinate i of every input, flattened."""
        minus, plus = [], []
        arguments, kwargs = self.case.rebuild(self.inputs, _as_float64)  # the same tensors, perturbed in place
        with torch.no_grad():
            center = self._evaluate(arguments, kwargs)
            for tensor in self.inputs:
                flat = tensor.view(-1)
                for index in range(flat.numel()):
                    original = flat[index].item()
                    flat[index] = original - eps
                    minus.append(self._evaluate(arguments, kwargs))
                    flat[index] = original + eps
                    plus.append(self._evaluate(arguments, kwargs))
                    flat[index] = original
        return np.array(minus), center, np.array(plus)

    def gradcheck(self, gradients: dict, eps: float = 1e-6) -> tuple:
        """(verdict, forward calls) of torch.autograd.gradcheck at ``eps`` and its default tolerances."""
        self.gradients = [
            torch.from_numpy(np.asarray(gradients[name], dtype=np.float64).reshape(tensor.shape))
            for name, tensor in zip(self.case.names, self.inputs)
        ]
        self.evaluations = 0
        inputs = tuple(tensor.clone().requires_grad_(True) for tensor in self.inputs)
        try:
            passed = torch.autograd.gradcheck(
                lambda *tensors: _ScalarObjective.apply(self, *tensors),
                inputs,
                eps=eps,
                fast_mode=False,
                raise_exception=False,
            )
        except Exception:  # noqa: BLE001 - the op raised at one of torch's probes: any exception type
            return "error", self.evaluations
        return ("passed" if passed else "failed"), self.evaluations


def flat_gradient(case: Case, gradients: dict) -> np.ndarray:
    """Every input's gradient, flattened in the order :meth:`TorchSide.probe` visits them."""
    return np.concatenate([np.asarray(gradients[name], dtype=np.float64).reshape(-1) for name in case.names])


def torch_verdict(analytic: np.ndarray, numerical: np.ndarray) -> str:
    """torch.allclose(analytic, numerical, rtol, atol) as gradcheck applies it."""
    with np.errstate(invalid="ignore"):
        close = np.abs(analytic - numerical) <= TORCH_ATOL + TORCH_RTOL * np.abs(numerical)
    return "passed" if bool(np.all(close)) else "failed"
