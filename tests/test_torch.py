"""gradcheck_cli.torch: torch code checked directly, in float64, float32 and bfloat16.

The functions under test are examples/torch_functions.py's hand-written
autograd Functions (GELU, layer norm, softmax cross-entropy, one attention
head), each correct and with one bug. Which inputs a bug reaches is worked
out by hand in that file's docstring; every expected number below says
where it comes from.
"""

import dataclasses
import importlib.util
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from extras import needs, require

torch = require("torch")

from click.testing import CliRunner  # noqa: E402

from gradcheck_cli import check_problem  # noqa: E402
from gradcheck_cli.cli import main  # noqa: E402
from gradcheck_cli.core.splitmix import splitmix64  # noqa: E402
from gradcheck_cli.errors import (  # noqa: E402
    AtParameter,
    InvalidArgument,
    InvalidCall,
    NotAProblem,
    SharedMemory,
    UnknownOption,
    UnsupportedDevice,
    UnsupportedTensor,
)
from gradcheck_cli.testing import failure_table  # noqa: E402
from gradcheck_cli.torch import (  # noqa: E402
    assert_gradients,
    check_function,
    check_module,
    cotangent,
    function_problem,
    module_problem,
    torch_problem,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
import torch_functions  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from torch_mlp import HandWrittenLinear  # noqa: E402  (its bug: the bias gradient is a mean over the batch)

from _torch_scenarios import (  # noqa: E402  (PyTorch's own gradcheck tests, ported: benchmarks/parity.py)
    ClippedScale,
    ForwardOnly,
    NonDeterministic,
    RandomInJvp,
    SineWithCosine,
    TwoOutputs,
    clip_and_log,
    forward_ad_scaled,
    gradient_of,
    raise_if_undefined,
    with_hook,
)
from _torch_scenarios import (  # noqa: E402
    Cube as CubeToThird,
)

HAS_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None
needs_ml_dtypes = needs("ml_dtypes")

# (function, the inputs its bug reaches): see examples/torch_functions.py.
FUNCTIONS = [
    pytest.param("gelu", ("inputs[0]",), id="gelu"),
    pytest.param("layer_norm", ("inputs[0]",), id="layer_norm"),
    pytest.param("cross_entropy", ("inputs[0]",), id="cross_entropy"),
    pytest.param("attention", ("inputs[0]", "inputs[1]", "inputs[2]"), id="attention"),
]
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def snapshot(tensors):
    """Each tensor's exact bits and its .grad (None or the exact bits), to compare after a check."""
    return [(bits(tensor), None if tensor.grad is None else bits(tensor.grad)) for tensor in tensors]


def bits(tensor):
    integer = {8: torch.int64, 4: torch.int32, 2: torch.int16}[tensor.element_size()]
    return tensor.detach().clone().view(integer)


def assert_unchanged(tensors, before):
    for tensor, (values, grad) in zip(tensors, before):
        assert torch.equal(bits(tensor), values)
        assert (tensor.grad is None) == (grad is None)
        if grad is not None:
            assert torch.equal(bits(tensor.grad), grad)


def float_tensors(inputs):
    return [value for value in inputs if isinstance(value, torch.Tensor) and value.is_floating_point()]


# The four Functions, correct and with their bug.


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, reached", FUNCTIONS)
def test_the_correct_function_passes_every_coordinate(name, reached, dtype):
    fn, inputs = torch_functions.FUNCTIONS[name](dtype)
    before = snapshot(float_tensors(inputs))
    report = check_function(fn, inputs, samples="all")
    assert report.passed, failure_table(report)
    assert {check.dtype for check in report.parameters} == {str(dtype).removeprefix("torch.")}
    # Every float input requires grad and is checked; the cross-entropy targets are integers, passed along only.
    assert [check.name for check in report.parameters] == [f"inputs[{i}]" for i in range(len(before))]
    assert_unchanged(float_tensors(inputs), before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, reached", FUNCTIONS)
def test_the_bug_fails_naming_the_inputs_it_reaches(name, reached, dtype):
    fn, inputs = torch_functions.FUNCTIONS[name](dtype, wrong=True)
    before = snapshot(float_tensors(inputs))
    report = check_function(fn, inputs)
    assert report.failing_parameters == reached
    # Real mismatches, not kinks or impurity. In float32 the sensitivity floor (3.9e-4) is below the
    # tolerance: layer_norm's bug moves inputs[0][0, 1] by 3.9e-4 relative, right at the floor, and
    # that coordinate is inconclusive rather than passed.
    verdicts = {record.verdict for _, record in report.failures()}
    assert "failed" in verdicts and verdicts <= ({"failed"} if dtype == torch.float64 else {"failed", "inconclusive"})
    assert report.purity.pure and report.verdict == "failed"
    assert_unchanged(float_tensors(inputs), before)


def test_float32_keeps_a_wide_margin_on_both_sides():
    # The largest scaled error of a correct Function in float32 (all coordinates) and the smallest
    # worst-coordinate error of a wrong one, against float32's tolerance ε^(1/3) = 4.92e-3: measured
    # 1.1e-4 (attention) at most, and 1.7e-2 (layer norm) at least, on the reference machine.
    worst_right, least_wrong = 0.0, np.inf
    for make in torch_functions.FUNCTIONS.values():
        right = check_function(*make(torch.float32), samples="all")
        wrong = check_function(*make(torch.float32, wrong=True), samples="all")
        worst_right = max(worst_right, max(r.comparison.scaled_error for c in right.parameters for r in c.checks))
        least_wrong = min(least_wrong, max(r.comparison.scaled_error for c in wrong.parameters for r in c.checks))
    tolerance = right.parameters[0].tolerance
    assert worst_right < tolerance / 10 < tolerance < least_wrong / 2


@needs_ml_dtypes
def test_bfloat16_smoke():
    # bfloat16's tolerance ε^(1/3) = 0.198 catches gross errors only: the attention head's softmax
    # bug is one.
    gelu, gelu_inputs = torch_functions.gelu(torch.bfloat16)
    before = snapshot(gelu_inputs)
    report = check_function(gelu, gelu_inputs, samples="all")
    # Never failed; a coordinate whose gradient (0.02) is smaller than bfloat16's error bar there
    # (about 0.2) may be inconclusive rather than passed.
    assert report.failed == 0 and report.verdict in ("passed", "inconclusive")
    assert report.parameters[0].dtype == "bfloat16" and report.inconclusive <= 1
    assert_unchanged(gelu_inputs, before)
    wrong, wrong_inputs = torch_functions.attention(torch.bfloat16, wrong=True)
    before = snapshot(wrong_inputs)
    report = check_function(wrong, wrong_inputs)
    assert not report.passed and "inputs[3]" not in report.failing_parameters
    assert_unchanged(wrong_inputs, before)


# The objective and the analytic side.


def reference_cotangent(count, output_index, seed):
    """u by the documented rule in Python integers, independent of the numpy implementation."""
    key = splitmix64(splitmix64(seed) ^ output_index)
    return [(2 * (splitmix64((key + k) % 2**64) >> 56) - 255) / 256 for k in range(count)]


def test_the_cotangent_is_the_documented_integer_rule():
    u = cotangent((3, 4), 1, seed=7)
    assert u.dtype == np.float64 and u.shape == (3, 4)
    assert u.ravel().tolist() == reference_cotangent(12, 1, 7)
    # Pinned values: the rule's output on every platform (splitmix64(0) = 0xE220A8397B1DCDAF).
    assert cotangent((4,), 0, seed=0).tolist() == reference_cotangent(4, 0, 0)
    assert splitmix64(0) >> 56 == 0xE2
    # Odd multiples of 1/256, never zero, exact in every floating dtype autograd may use.
    wide = cotangent((1000,), 0)
    assert np.all(np.abs(wide) <= 255 / 256) and np.all((wide * 256) % 2 == 1)
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        assert torch.equal(torch.from_numpy(wide).to(dtype).double(), torch.from_numpy(wide))
    assert not np.array_equal(cotangent((8,), 0), cotangent((8,), 1))
    assert not np.array_equal(cotangent((8,), 0, seed=0), cotangent((8,), 0, seed=1))
    assert np.array_equal(cotangent((8,), 0, seed=-1), cotangent((8,), 0, seed=2**64 - 1))


def test_the_problem_is_u_dot_fn_and_its_vector_jacobian_product():
    # fn(x, w) = (x·w, sum x²): ⟨u, fn⟩ = Σ u₀ x w + u₁ Σ x², so the gradients are exactly
    # u₀ w + 2 u₁ x and u₀ x (every product of a 1/256 multiple and a small float64 is exact here).
    x = torch.tensor([0.5, -1.25, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([1.5, 0.25, -0.75], dtype=torch.float64, requires_grad=True)
    problem = function_problem(lambda x, w: (x * w, (x * x).sum()), (x, w), seed=3)
    u0, u1 = cotangent((3,), 0, seed=3), cotangent((), 1, seed=3)
    xs, ws = x.detach().numpy(), w.detach().numpy()
    assert np.array_equal(problem.gradients["inputs[0]"], u0 * ws + 2 * u1 * xs)
    assert np.array_equal(problem.gradients["inputs[1]"], u0 * xs)
    assert problem.objective(problem.parameters) == float(np.sum(u0 * xs * ws)) + float(u1 * np.sum(xs * xs))
    # The parameters are the tensors' own memory.
    assert np.shares_memory(problem.parameters["inputs[0]"], xs)


def test_outputs_that_are_not_differentiable_are_left_out():
    x = torch.tensor([0.5, -1.5, 2.5], requires_grad=True, dtype=torch.float64)

    def fn(x):
        return x.sin(), x.argmax(), (x > 0), x.detach() * 1e6

    problem = function_problem(fn, (x,))
    # Only output 0 counts: ⟨u₀, sin x⟩, gradient u₀ cos x.
    u0 = cotangent((3,), 0)
    assert problem.objective(None) == float(torch.sum(torch.from_numpy(u0) * x.detach().sin()))
    assert np.allclose(problem.gradients["inputs[0]"], u0 * np.cos(x.detach().numpy()), rtol=1e-15, atol=0)
    assert check_problem(problem).passed


def test_an_unused_input_has_a_zero_gradient_and_a_detached_one_fails():
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    unused = torch.ones(2, dtype=torch.float64, requires_grad=True)
    report = check_function(lambda x, unused: x * 2, (x, unused))
    assert report.passed
    assert all(record.comparison.analytic == 0.0 for record in report.parameter("inputs[1]").checks)
    # A backward that loses its input (x.detach() inside fn) gives None, checked as zero: it fails.
    report = check_function(lambda x, y: x * 2 + (y.detach() ** 2).sum(), (x, unused))
    assert report.failing_parameters == ("inputs[1]",)


def test_inputs_without_requires_grad_are_passed_and_not_checked():
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    scale = torch.full((4,), 3.0, dtype=torch.float64)
    report = check_function(lambda x, scale, power: scale * x**power, (x, scale, 2))
    assert report.passed and [check.name for check in report.parameters] == ["inputs[0]"]
    with pytest.raises(InvalidCall, match=r"fn\(\*inputs\) has no input tensor that requires grad"):
        check_function(lambda scale: scale * 2, (scale,))


def test_a_mapping_of_inputs_is_passed_by_keyword_and_named_by_key():
    fn, (x, weight, bias) = torch_functions.layer_norm(torch.float64, wrong=True)
    report = check_function(fn, {"x": x, "weight": weight, "bias": bias})
    assert [check.name for check in report.parameters] == ["x", "weight", "bias"]
    assert report.failing_parameters == ("x",)


def test_a_single_tensor_stands_for_a_one_tuple():
    fn, (x,) = torch_functions.gelu(torch.float64)
    assert check_function(fn, x) == check_function(fn, (x,))


def test_every_option_reaches_check_gradients_and_its_report_comes_back_untouched():
    fn, inputs = torch_functions.attention(torch.float64, wrong=True)
    options = {"samples": 3, "step": 1e-6, "tolerance": 1e-4, "names": ["inputs[2]", "inputs[3]"]}
    report = check_function(fn, inputs, **options)
    # The report is check_problem's, with the checks of the backward's calls beside, of the named inputs.
    assert report == dataclasses.replace(check_problem(function_problem(fn, inputs), **options), calls=report.calls)
    assert [call.kind for call in report.calls] == ["determinism", "undefined gradients"]
    assert {call.parameter for call in report.calls} <= {"inputs[2]", "inputs[3]"}
    assert all(call.passed for call in report.calls)
    assert [check.name for check in report.parameters] == ["inputs[2]", "inputs[3]"]
    assert {check.step for check in report.parameters} == {1e-6}
    assert {check.tolerance for check in report.parameters} == {1e-4}
    assert report.failing_parameters == ("inputs[2]",)
    explicit = check_function(fn, inputs, coordinates={"inputs[3]": [(0, 1)]}, names=["inputs[3]"])
    assert explicit.parameters[0].selection == "explicit" and explicit.checked == 1
    auto = check_function(fn, inputs, step="auto", names=["inputs[3]"])
    assert auto.step_advice is not None and auto.passed
    with pytest.raises(InvalidArgument):
        check_function(fn, inputs, samples=-1)


def test_assert_gradients_raises_the_failure_table():
    fn, inputs = torch_functions.cross_entropy(torch.float32, wrong=True)
    with pytest.raises(AssertionError) as caught:
        assert_gradients(fn, inputs, samples=4)
    assert str(caught.value) == failure_table(check_function(fn, inputs, samples=4))
    assert str(caught.value).startswith("gradient check failed: ")
    report = assert_gradients(*torch_functions.cross_entropy(torch.float32))
    assert report.passed


# Inputs: what is probed, what is refused before any call.


def counting(fn):
    calls = []

    def counted(*arguments, **keywords):
        calls.append(1)
        return fn(*arguments, **keywords)

    return counted, calls


def test_a_non_leaf_input_is_checked_as_an_input_and_its_graph_still_works():
    # x = 2a is not a leaf; it is probed in place as fn's own input (d/dx, not d/da), and the graph
    # that made it is intact afterwards: backward through it gives a.grad = 2 exactly.
    a = torch.tensor([0.5, 1.5, -2.0], dtype=torch.float64, requires_grad=True)
    x = a * 2
    x_before = bits(x)
    fn, _ = torch_functions.gelu(torch.float64)
    assert check_function(fn, (x,), samples="all").passed
    assert not check_function(torch_functions.wrong_gelu()[0], (x,)).passed
    assert torch.equal(bits(x), x_before) and a.grad is None
    x.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32] + ([torch.bfloat16] if HAS_ML_DTYPES else []))
def test_a_non_contiguous_input_is_probed_through_its_strides(dtype):
    base = torch.randn(6, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64).to(dtype)
    x = base.T.requires_grad_()  # a [4, 6] view with strides (1, 4)
    assert not x.is_contiguous()
    before = snapshot([x])
    report = check_function(torch_functions.gelu()[0], (x,), samples="all")
    assert report.passed and report.checked == 24
    assert_unchanged([x], before)


def test_tensors_that_share_memory_are_refused_naming_both():
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    fn, calls = counting(lambda x, row: x.sum() + row.sum())
    with pytest.raises(SharedMemory) as caught:
        check_function(fn, (x, x[1]))
    assert (caught.value.first, caught.value.second) == ("inputs[0]", "inputs[1]")
    # Unchecked inputs count too: probing x would perturb a detached view of it.
    with pytest.raises(SharedMemory, match=r"tensors 'inputs\[0\]' and 'inputs\[1\]' share memory"):
        check_function(fn, (x, x.detach()[::2]))
    # Disjoint views of one tensor do not share memory.
    base = torch.randn(6, dtype=torch.float64)
    assert check_function(fn, (base[:3].requires_grad_(), base[3:].requires_grad_())).passed
    assert len(calls) > 0
    calls.clear()
    with pytest.raises(SharedMemory):
        check_function(fn, (x, x))
    assert calls == []


def test_an_input_whose_elements_share_memory_is_refused():
    expanded = torch.randn(3, 1, dtype=torch.float64).expand(3, 4).requires_grad_()
    fn, calls = counting(lambda x: x * x)
    with pytest.raises(UnsupportedTensor, match=r"tensor 'inputs\[0\]' has elements that may share memory"):
        check_function(fn, (expanded,))
    assert calls == []


@pytest.mark.parametrize("device", ["meta"])
def test_tensors_off_the_cpu_are_refused_before_any_call(device):
    fn, calls = counting(lambda x, y: x * y)
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    elsewhere = torch.ones(3, dtype=torch.float64, device=device)
    with pytest.raises(UnsupportedDevice) as caught:
        check_function(fn, (x, elsewhere))
    assert str(caught.value).startswith(f"tensor 'inputs[1]' is on device {device}; gradcheck probes CPU tensors only")
    with pytest.raises(UnsupportedDevice):
        check_function(fn, {"x": elsewhere.requires_grad_(), "y": x})
    assert calls == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_are_refused_before_any_call():
    fn, calls = counting(lambda x: x * x)
    with pytest.raises(UnsupportedDevice, match="is on device cuda:0"):
        check_function(fn, (torch.ones(3, device="cuda", requires_grad=True),))
    assert calls == []


def test_dtypes_and_layouts_that_cannot_be_probed_are_refused_naming_the_nearest_form():
    fn, calls = counting(lambda x: x * 2)
    with pytest.warns(UserWarning, match="ComplexHalf support is experimental"):
        half = torch.ones(3, dtype=torch.complex32, requires_grad=True)
    with pytest.raises(UnsupportedTensor) as caught:
        check_function(fn, (half,))
    assert str(caught.value) == (
        "tensor 'inputs[0]' has dtype torch.complex32; gradcheck probes float64, float32, float16, bfloat16, "
        "complex128 and complex64 tensors; the nearest is complex64: pass .to(torch.complex64)"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's notice that CSC support is in beta
        csc = torch.eye(3, dtype=torch.float64).to_sparse_csc().requires_grad_()
    with pytest.raises(
        UnsupportedTensor, match=r"has layout torch.sparse_csc; .*: pass .to_dense\(\) or .to_sparse_coo\(\)$"
    ):
        check_function(fn, (csc,))
    conjugated = torch.ones(3, dtype=torch.complex128, requires_grad=True).conj()
    with pytest.raises(UnsupportedTensor, match=r"lazily conjugated .*: pass .resolve_conj\(\)$"):
        check_function(fn, (conjugated,))
    assert calls == []


def test_outputs_that_cannot_be_checked_are_refused():
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    cases = [
        (lambda x: {"y": x}, "must return a tensor or a tuple of tensors, got dict"),
        (lambda x: (x, 3), "must return a tensor or a tuple of tensors, got int as output 1"),
        (lambda x: x.to_sparse(), "returned output 0 with layout torch.sparse_coo, which gradcheck does not check"),
    ]
    for fn, message in cases:
        with pytest.raises(InvalidCall, match=r"^fn\(\*inputs\) " + message):
            check_function(fn, (x,))
    with pytest.raises(InvalidArgument, match="fn must be callable, got int"):
        check_function(3, (x,))


def test_an_output_that_changes_shape_under_a_probe_is_an_error_at_that_coordinate():
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)

    def fn(x):
        return x * 2 if x[0] == 1.0 else (x * 2)[:2]

    with pytest.raises(AtParameter) as caught:
        check_function(fn, (x,), coordinates={"inputs[0]": [0]})
    assert "fn(*inputs) output 0 had shape [3], then [2]" in str(caught.value)
    assert x.detach().tolist() == [1.0, 1.0, 1.0]


# Every path leaves every tensor bit-identical.


class Interrupted(Exception):
    pass


@pytest.mark.parametrize("raised", [Interrupted, KeyboardInterrupt])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32] + ([torch.bfloat16] if HAS_ML_DTYPES else []))
def test_an_exception_inside_fn_propagates_with_every_input_restored(raised, dtype):
    fn, inputs = torch_functions.attention(dtype)
    for x in inputs:
        x.grad = torch.full_like(x, 0.125)
    before = snapshot(inputs)
    calls = []

    def interrupted(*arguments):
        calls.append(1)
        if len(calls) == 20:  # the analytic call, then the probes of the 7th coordinate
            raise raised("stop")
        return fn(*arguments)

    with pytest.raises(raised, match="stop"):
        check_function(interrupted, inputs)
    assert len(calls) == 20
    assert_unchanged(inputs, before)


# Modules.


class CustomLinear(torch.nn.Module):
    def __init__(self, inputs, outputs, mean_bias_gradient=False):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(outputs, inputs) / inputs**0.5)
        self.bias = torch.nn.Parameter(torch.randn(outputs) * 0.1)
        self.mean_bias_gradient = mean_bias_gradient

    def forward(self, x):
        return HandWrittenLinear.apply(x, self.weight, self.bias, self.mean_bias_gradient)


class Mlp(torch.nn.Module):
    def __init__(self, mean_bias_gradient=False, dropout=0.0):
        super().__init__()
        self.l1 = torch.nn.Linear(5, 8)
        self.norm = torch.nn.BatchNorm1d(8)
        self.l2 = CustomLinear(8, 3, mean_bias_gradient)
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, x):
        return self.l2(self.dropout(torch.tanh(self.norm(self.l1(x)))))


def mlp(dtype=torch.float64, mean_bias_gradient=False, dropout=0.0):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = Mlp(mean_bias_gradient, dropout).to(dtype)
        x = torch.randn(6, 5, dtype=dtype)
        targets = torch.tensor([0, 2, 1, 1, 0, 2])
    return model, (lambda module: torch.nn.functional.cross_entropy(module(x), targets))


def module_state(model):
    return snapshot(list(model.parameters())), [bits(buffer) for buffer in model.buffers()], model.training


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_a_module_is_checked_under_torchs_parameter_names(dtype, training):
    model, loss_fn = mlp(dtype)
    model.train(training)
    model.l1.bias.requires_grad_(False)  # frozen: not checked, still used
    model.l2.weight.grad = torch.full_like(model.l2.weight, 0.5)
    before = module_state(model)
    report = check_module(model, loss_fn, samples="all")
    assert report.passed, failure_table(report)
    names = ["l1.weight", "norm.weight", "norm.bias", "l2.weight", "l2.bias"]
    assert [check.name for check in report.parameters] == names
    assert_unchanged(list(model.parameters()), before[0])
    # BatchNorm in training mode updates its running statistics at every forward; they are written back.
    assert all(torch.equal(bits(buffer), saved) for buffer, saved in zip(model.buffers(), before[1]))
    assert model.training == training


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_bug_in_a_modules_custom_op_fails_naming_that_modules_parameters_only(dtype):
    model, loss_fn = mlp(dtype, mean_bias_gradient=True)
    before = module_state(model)
    report = check_module(model, loss_fn)
    # The bias gradient is divided by the batch of 6: analytic/numerical = 1/6, and nothing else is wrong.
    assert report.failing_parameters == ("l2.bias",)
    # Read within each estimate's own error bar: a float32 bias gradient of 5e-3 carries a bar of 2 %.
    for record in report.parameter("l2.bias").checks:
        analytic, numerical = record.comparison.analytic, record.comparison.numerical
        bar = next(estimate.error_bar.total for estimate in record.estimates if estimate.numerical == numerical)
        assert abs(6 * analytic - numerical) <= max(bar, 1e-8 * abs(numerical)), (analytic, numerical, bar)
    assert_unchanged(list(model.parameters()), before[0])


def test_a_module_with_dropout_in_training_mode_is_reported_impure():
    model, loss_fn = mlp(dropout=0.5)
    report = check_module(model, loss_fn, samples=2)
    assert not report.passed and not report.purity.pure and report.purity.stateful
    model.eval()
    assert check_module(model, loss_fn, samples=2).passed


def test_module_problem_refuses_what_it_cannot_check():
    model, loss_fn = mlp()
    with pytest.raises(InvalidCall, match=r"loss_fn\(module\) must return a floating-point tensor with one") as caught:
        check_module(model, lambda module: module(torch.randn(6, 5, dtype=torch.float64)))
    assert str(caught.value).endswith("that requires grad, got torch.float64 of shape [6, 3]")  # it does require grad
    with pytest.raises(InvalidCall, match=r"got torch.float64 of shape \[\], requires_grad=False$"):
        check_module(model, lambda module: module(torch.randn(6, 5, dtype=torch.float64)).sum().detach())
    with pytest.raises(InvalidCall, match=r"check_module needs a torch.nn.Module, got function"):
        check_module(loss_fn, loss_fn)
    with pytest.raises(InvalidArgument, match="loss_fn must be callable"):
        check_module(model, None)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    with pytest.raises(InvalidCall, match="has no module parameter that requires grad"):
        module_problem(model, loss_fn)


# Without torch, and on the command line.


def test_without_torch_the_package_and_the_cli_work_and_the_adapter_says_how_to_get_it():
    script = textwrap.dedent(
        """
        import sys
        sys.modules["torch"] = None  # as if torch were not installed
        import gradcheck_cli
        from gradcheck_cli.cli import main
        try:
            import gradcheck_cli.torch
        except ImportError as error:
            print(type(error).__name__, isinstance(error, gradcheck_cli.GradCheckError))
            print(error)
        sys.argv = ["gradcheck", "quadratic"]
        main()
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=ROOT)
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        "TorchUnavailable True",
        "gradcheck_cli.torch needs torch, which is not installed: pip install torch==2.13.0 --index-url "
        "https://download.pytorch.org/whl/cpu (its CPU build; docs/torch.md)",
    ]
    assert result.returncode == 0 and len(lines) > 2, result.stderr


def test_the_torch_inside_the_adapter_is_the_real_torch():
    import gradcheck_cli.adapters.torch.views as adapter

    assert adapter.torch is sys.modules["torch"] is torch
    assert Path(adapter.torch.__file__).parent.name == "torch"


def invoke(*arguments):
    runner = CliRunner(env={"NO_COLOR": "1", "COLUMNS": None})
    return runner.invoke(main, list(arguments), prog_name="gradcheck", catch_exceptions=False)


PROBLEMS = """
    import torch

    from torch_functions import attention, wrong_attention, layer_norm

    def tensors():
        # A problem in the numpy style whose parameters and gradients are tensors.
        w = torch.tensor([0.5, -1.5, 2.0], requires_grad=True)
        (w * w).sum().backward()
        return (lambda parameters: float((parameters["w"] * parameters["w"]).sum())), {{"w": w}}, {{"w": w.grad}}

    def wrong_tensors():
        objective, parameters, gradients = tensors()
        return objective, parameters, {{"w": gradients["w"] * 3}}

    def module():
        model = torch.nn.Linear(3, 2).double()
        x = torch.ones(4, 3, dtype=torch.float64)
        return model, lambda model: model(x).square().mean()

    def failing():
        def fn(x):
            raise ZeroDivisionError("no probes, please")
        return fn, (torch.ones(2, requires_grad=True),)

    def on_meta():
        return (lambda x: x * 2), (torch.ones(2, device="meta", requires_grad=True),)
"""


@pytest.fixture
def problems(tmp_path):
    (tmp_path / "torch_functions.py").write_text((ROOT / "examples" / "torch_functions.py").read_text())
    path = tmp_path / "torch_problems.py"
    path.write_text(textwrap.dedent(PROBLEMS.format()))
    return path


@pytest.mark.parametrize(
    "function, exit_code, failing",
    [
        ("attention", 0, []),
        ("wrong_attention", 1, ["inputs[0]", "inputs[1]", "inputs[2]"]),
        ("layer_norm", 0, []),
        ("tensors", 0, []),
        ("wrong_tensors", 1, ["w"]),
        ("module", 0, []),
    ],
)
def test_gradcheck_check_takes_torch_code(problems, function, exit_code, failing):
    import json

    result = invoke("check", f"{problems}:{function}", "--json", "--samples", "3")
    assert result.exit_code == exit_code, result.stderr
    assert json.loads(result.stdout)["check"]["failing_parameters"] == failing


def test_gradcheck_check_reports_torch_code_that_raises_or_cannot_be_probed(problems):
    result = invoke("check", f"{problems}:failing")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"Error: the objective of {problems}:failing raised ZeroDivisionError: no probes, please (at "
    )
    assert result.stderr.endswith(" in fn)\n")  # the user's line that raised, in the analytic pass too
    result = invoke("check", f"{problems}:on_meta")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: tensor 'inputs[0]' is on device meta; gradcheck probes CPU tensors only")


def test_the_example_script_checks_every_function_both_ways():
    script = ROOT / "examples" / "torch_functions.py"
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 16
    assert "wrong_attention (float32): 64 coordinates, failed: inputs[0], inputs[1], inputs[2]" in lines


def test_only_torch_code_is_adapted():
    from gradcheck_cli.torch import torch_problem

    def squares(parameters):
        return float(np.sum(parameters["w"] ** 2))

    w = np.array([1.0, 2.0])
    for returned in [(squares, {"w": w}), (squares, {"w": w}, {"w": 2 * w}), None, "problem"]:
        assert torch_problem(returned) is returned


def test_a_module_returned_with_more_than_its_loss_says_what_a_modules_problem_is():
    from gradcheck_cli.torch import torch_problem

    model, loss_fn = mlp()
    with pytest.raises(NotAProblem) as caught:
        torch_problem((model, loss_fn, "extra"), "torch_problems.py:problem()")
    assert str(caught.value) == (
        "expected a GradientProblem or (objective, parameters, gradients) from torch_problems.py:problem(), "
        "got a 3-tuple (Mlp, function, str): a module's problem is (module, loss_fn)"
    )


# The guide and the README, as written (their command sessions are tests/test_docs.py's).

# The README's torch snippet is a doctest, run by test_docs.py when torch is installed.
GUIDES = [ROOT / "docs" / "torch.md"]


def fenced_blocks(path, language):
    blocks, block = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        if block is None and line == f"```{language}":
            block = []
        elif block is not None and line == "```":
            blocks.append(block)
            block = None
        elif block is not None:
            block.append(line)
    return blocks


def torch_examples(path):
    """The torch snippets of ``path`` that are not doctests (test_docs.py runs those)."""
    blocks = [block for block in fenced_blocks(path, "python") if "gradcheck_cli.torch" in "\n".join(block)]
    return [block for block in blocks if not block[0].startswith(">>> ")]


@pytest.mark.parametrize("path", GUIDES, ids=lambda path: path.name)
def test_the_torch_example_prints_what_its_comment_says(path, capsys):
    (block,) = torch_examples(path)
    assert len(block) <= 10
    printed = next(line for line in block if line.startswith("print("))
    expected = printed.split("#", 1)[1].strip()
    with torch.random.fork_rng():
        exec(compile("\n".join(block), str(path), "exec"), {})
    assert capsys.readouterr().out.strip() == expected


def test_a_sparse_input_that_is_not_checked_is_passed_along():
    adjacency = torch.eye(3, dtype=torch.float64).to_sparse()
    x = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    report = check_function(lambda adjacency, x: torch.sparse.mm(adjacency, x).tanh(), (adjacency, x))
    assert report.passed and [check.name for check in report.parameters] == ["inputs[1]"]


class Cube(torch.autograd.Function):
    """x³ whose backward is right; with ``wrong`` it is computed from a detached x, so that its own
    derivative (the double backward, 6x·g·v) is lost: the double backward is zero."""

    @staticmethod
    def forward(ctx, x, wrong):
        ctx.save_for_backward(x)
        ctx.wrong = wrong
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * (x.detach() if ctx.wrong else x) ** 2 * g, None


class Sine(torch.autograd.Function):
    """sin with a forward-mode rule; with ``wrong`` the rule's sign is flipped (−cos x·t)."""

    @staticmethod
    def forward(x, wrong):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])
        ctx.wrong = inputs[1]

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.cos(x) * g, None

    @staticmethod
    def jvp(ctx, t, _):
        (x,) = ctx.saved_tensors
        return (-1.0 if ctx.wrong else 1.0) * torch.cos(x) * t


@pytest.mark.parametrize("dtype", DTYPES)
def test_order_2_fails_a_backward_that_is_right_but_not_differentiable_correctly(dtype):
    x = torch.linspace(-1.0, 2.0, 7, dtype=dtype, requires_grad=True)
    y = torch.linspace(0.5, 1.5, 7, dtype=dtype, requires_grad=True)
    before = snapshot([x, y])
    for wrong in (False, True):
        assert check_function(lambda x, y: Cube.apply(x, wrong) * y, (x, y)).passed  # the first order is right
    assert check_function(lambda x, y: Cube.apply(x, False) * y, (x, y), order=2).passed
    report = check_function(lambda x, y: Cube.apply(x, True) * y, (x, y), order=2)
    # Order 2 checks the backward (rev) and its backward (rev∘rev). The lost term 6x·g is ∂²/∂x²;
    # ∂²/∂x∂y (3x²) goes through y's product and stays right.
    assert [check.name for check in report.parameters] == [
        "inputs[0] (rev)",
        "inputs[1] (rev)",
        "inputs[0] (rev∘rev)",
        "inputs[1] (rev∘rev)",
    ]
    assert report.failing_parameters == ("inputs[0] (rev∘rev)",)
    assert_unchanged([x, y], before)
    assert x.grad is None and y.grad is None


class Sextuple(torch.autograd.Function):
    """6x whose backward, gO·3·temp/inp with temp = 2x and inp = x read from ctx attributes
    (pytorch/pytorch#76185), is right, 6·gO, but differentiates to −6·gO·v/x through 1/inp where the
    true second derivative is 0: the order-2 objective ⟨v, 6u⟩ is flat, its analytic value is not."""

    @staticmethod
    def forward(ctx, x):
        ctx.temp, ctx.inp = 2 * x, x
        return 6 * x.detach()

    @staticmethod
    def backward(ctx, g):
        return g * 3 * ctx.temp / ctx.inp


def test_order_2_fails_a_flat_second_derivative_beside_a_nonzero_analytic_one_saying_what_it_saw():
    x = torch.linspace(0.5, 2.0, 6, dtype=torch.float64, requires_grad=True)
    assert check_function(Sextuple.apply, (x,)).passed  # the first order is right
    report = check_function(Sextuple.apply, (x,), order=2)
    assert report.verdict == "failed" and report.failing_parameters == ("inputs[0] (rev∘rev)",)  # inconclusive before
    diagnosis = report.parameter("inputs[0] (rev∘rev)").diagnosis
    assert diagnosis.message.startswith("f does not change")  # exactly, or within the bars of 0
    assert "while their analytic values are nonzero" in diagnosis.message
    assert "stale" not in diagnosis.message and "does not read" not in diagnosis.message


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_mode_fails_a_jvp_with_a_sign_error_naming_its_input(dtype):
    x = torch.linspace(-1.0, 2.0, 9, dtype=dtype, requires_grad=True)
    before = snapshot([x])
    assert check_function(lambda x: Sine.apply(x, False), (x,), modes=("fwd",)).passed
    report = check_function(lambda x: Sine.apply(x, True), (x,), modes=("fwd",))
    assert report.failing_parameters == ("inputs[0]",)
    # One 0-d ε per input: the analytic ⟨u, J·t⟩ is minus the numerical one.
    record = report.parameter("inputs[0]").checks[0]
    assert record.comparison.analytic == pytest.approx(-record.comparison.numerical, rel=1e-2)
    assert_unchanged([x], before)


def test_both_modes_check_the_backward_and_the_jvp_each_parameter_named_with_its_mode():
    x = torch.linspace(-1.0, 2.0, 9, dtype=torch.float64, requires_grad=True)
    report = check_function(lambda x: Sine.apply(x, True), (x,), modes=("rev", "fwd"))
    assert [check.name for check in report.parameters] == ["inputs[0] (fwd)", "inputs[0] (rev)"]
    assert report.failing_parameters == ("inputs[0] (fwd)",)  # the backward is right, the jvp's sign wrong
    assert report.evaluations == sum(
        check_function(lambda x: Sine.apply(x, True), (x,), modes=(mode,)).evaluations for mode in ("fwd", "rev")
    )


def test_an_unknown_order_or_mode_is_refused():
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    with pytest.raises(InvalidArgument, match="modes must be"):
        check_function(torch.sin, (x,), modes=("forward",))
    with pytest.raises(InvalidArgument, match="order must be 1, 2 or 3, got 4"):
        check_function(torch.sin, (x,), order=4)
    with pytest.raises(UnknownOption, match="no option 'mode' \\(did you mean 'modes'\\?\\)"):
        check_function(torch.sin, (x,), mode="forward")


def test_the_directional_taylor_test_of_the_double_backward():
    from gradcheck_cli import check_taylor
    from gradcheck_cli.adapters.torch import double_backward_problem

    x = torch.linspace(-1.0, 2.0, 7, dtype=torch.float64, requires_grad=True)
    assert check_taylor(double_backward_problem(lambda x: Cube.apply(x, False), (x,))).verdict == "passed"
    result = check_taylor(double_backward_problem(lambda x: Cube.apply(x, True), (x,)))
    assert result.verdict == "failed" and result.reason == "first order"


# Every order in every mode, and the checks of the derivative calls (issue 33). Each case is first
# decided by torch's own checker (gradcheck, gradgradcheck): the right version passes it, the buggy one
# fails it, and gradcheck must agree.


def torch_passes(fn, inputs, checker=None, **options) -> bool:
    """Whether torch's ``checker`` (gradcheck by default) passes ``fn``; any exception it raises fails it."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its float32 and undefined-gradient notices
            return (checker or torch.autograd.gradcheck)(fn, inputs, **options)
    except Exception:  # noqa: BLE001 (a GradcheckError, or the function's own error torch lets through)
        return False


def points(n, seed, low=-1.0, high=1.0, dtype=torch.float64):
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand(n, generator=generator, dtype=torch.float64) * (high - low) + low).to(dtype).requires_grad_()


def failed_calls(report) -> list:
    return [(call.kind, call.parameter, call.output) for call in report.calls if not call.passed]


def test_order_3_checks_every_order_and_fails_a_wrong_third_derivative_only():
    right, wrong = (lambda x: CubeToThird.apply(x, 6.0)), (lambda x: CubeToThird.apply(x, 7.0))
    x = points(4, 1, 0.5, 1.5)
    assert torch_passes(gradient_of(right), (x,), torch.autograd.gradgradcheck)
    assert not torch_passes(gradient_of(wrong), (x,), torch.autograd.gradgradcheck)
    before = snapshot([x])
    assert check_function(right, (x,), order=3).passed
    report = check_function(wrong, (x,), order=3)
    assert [check.name for check in report.parameters] == [
        "inputs[0] (rev)",
        "inputs[0] (rev∘rev)",
        "inputs[0] (rev∘rev∘rev)",
    ]
    assert report.failing_parameters == ("inputs[0] (rev∘rev∘rev)",)  # 7 where 6 belongs, at the third order
    assert check_function(wrong, (x,), order=2).passed  # the first two orders are right
    assert_unchanged([x], before)
    assert x.grad is None


def test_both_modes_at_order_2_recurse_as_check_grads_and_name_forward_over_reverse():
    x = points((4, 3), 2)
    fwd_over_rev = {"check_fwd_over_rev": True}
    assert torch_passes(lambda x: SineWithCosine.apply(x, 1.0), (x,), torch.autograd.gradgradcheck, **fwd_over_rev)
    wrong = lambda x: SineWithCosine.apply(x, 2.0)  # noqa: E731
    assert not torch_passes(wrong, (x,), torch.autograd.gradgradcheck, **fwd_over_rev)
    assert check_function(lambda x: SineWithCosine.apply(x, 1.0), (x,), order=2, modes=("fwd", "rev")).passed
    report = check_function(wrong, (x,), order=2, modes=("rev", "fwd"))
    labels = ["fwd", "fwd∘fwd", "rev∘fwd", "rev", "fwd∘rev", "rev∘rev"]  # check_grads' order
    assert [check.name for check in report.parameters] == [f"inputs[0] ({label})" for label in labels]
    # Only forward mode through the backward runs the backward's Cosine jvp: torch's check_fwd_over_rev.
    assert report.failing_parameters == ("inputs[0] (fwd∘rev)",)
    # A linear function's derivatives of derivatives are zeros forward AD keeps without memory (ZeroTensor).
    assert torch_passes(lambda x: x.mul(5), (x,), torch.autograd.gradgradcheck, **fwd_over_rev)
    assert check_function(lambda x: x.mul(5), (x,), order=3, modes=("fwd", "rev")).passed


class SquareWithDetachedJvp(torch.autograd.Function):
    """x² whose jvp is right, 2x·t, but computed from a detached x when ``detached``: its own
    derivative along a second tangent (forward over forward, 2·t·s) is lost."""

    @staticmethod
    def forward(ctx, x, detached):
        ctx.save_for_forward(x)
        ctx.detached = detached
        return x * x

    @staticmethod
    def jvp(ctx, t, _):
        (x,) = ctx.saved_tensors
        return 2 * (x.detach() if ctx.detached else x) * t


def test_forward_over_forward_of_a_function_with_only_a_jvp():
    # torch has no forward-over-forward check; the numbers are exact: ⟨u, 2·t·s⟩ against ⟨u, 0⟩.
    x = points(5, 3)
    assert check_function(lambda x: SquareWithDetachedJvp.apply(x, False), (x,), order=2, modes=("fwd",)).passed
    report = check_function(lambda x: SquareWithDetachedJvp.apply(x, True), (x,), order=2, modes=("fwd",))
    assert [check.name for check in report.parameters] == ["inputs[0] (fwd)", "inputs[0] (fwd∘fwd)"]
    assert report.failing_parameters == ("inputs[0] (fwd∘fwd)",)


def test_forward_mode_runs_no_backward_and_makes_every_input_dual():
    only_forward = {"check_forward_ad": True, "check_backward_ad": False, "check_undefined_grad": False}
    x, y = points(4, 4), points(5, 5)
    for scale, passes in ((1.0, True), (2.0, False)):
        fn = lambda a, b, scale=scale: ForwardOnly.apply(a, b, scale)  # noqa: E731
        assert torch_passes(fn, (x, y), check_batched_grad=False, **only_forward) is passes
        assert check_function(fn, (x, y), modes=("fwd",)).passed is passes  # no backward: no crash
    assert (
        not check_function(lambda a, b: ForwardOnly.apply(a, b, 2.0), (x, y), modes=("fwd",))
        .parameter("inputs[0]")
        .passed
    )
    y = points((2, 4), 6)
    assert not torch_passes(forward_ad_scaled, (points((2, 4), 7), y), check_forward_ad=True)
    report = check_function(forward_ad_scaled, (points((2, 4), 7), y), modes=("fwd",))
    assert report.failing_parameters == ("inputs[1]",)  # y's tangent is read, so y must be dual


def test_a_backward_is_called_with_each_output_gradient_undefined():
    x = points(3, 8)
    for missing in ("zero", "one", "as is"):
        fn = lambda x, missing=missing: TwoOutputs.apply(x, missing)  # noqa: E731
        assert torch_passes(fn, (x,)) is (missing == "zero")
        report = check_function(fn, (x,))
        assert report.passed is (missing == "zero"), missing
    ones = check_function(lambda x: TwoOutputs.apply(x, "one"), (x,))
    assert ones.parameter("inputs[0]").passed  # with every gradient given, the backward is right
    # Taking a missing gradient as ones is wrong wherever one is missing: by 2 (output 0's) or 2x (output 1's).
    assert failed_calls(ones) == [
        ("undefined gradients", "inputs[0]", None),
        ("undefined gradients", "inputs[0]", 0),
        ("undefined gradients", "inputs[0]", 1),
    ]
    output_1 = [call for call in ones.calls if call.output == 1][0]
    assert output_1.difference == pytest.approx(float(2 * x.detach().abs().max()), rel=1e-15)
    assert output_1.message.startswith("with output 1's gradient undefined, the backward and the backward given")
    broken = check_function(lambda x: TwoOutputs.apply(x, "as is"), (x,))
    assert broken.failing_parameters == ("inputs[0]",) and broken.verdict == "failed"
    assert [call.message.split(", the backward ")[1] for call in broken.calls[1:]] == [
        "raised TypeError: unsupported operand type(s) for *: 'int' and 'NoneType'",
        "raised TypeError: unsupported operand type(s) for *: 'int' and 'NoneType'",
        "raised TypeError: unsupported operand type(s) for *: 'Tensor' and 'NoneType'",
    ]
    assert "a backward mishandles an undefined output gradient in inputs[0]" in failure_table(broken)


def test_a_tensor_hook_is_registered_with_grad_mode_on_and_an_undefined_gradient_reaches_it():
    x = points(4, 9)
    grad_modes = []

    def recording(x):
        grad_modes.append(torch.is_grad_enabled())
        return with_hook(clip_and_log)(x)

    assert torch_passes(recording, (x,)) and check_function(recording, (x,)).passed
    assert set(grad_modes) == {True}  # every probe too: the user's code registers a hook
    assert not torch_passes(with_hook(raise_if_undefined), (x,))
    report = check_function(with_hook(raise_if_undefined), (x,))
    assert report.parameter("inputs[0]").passed and failed_calls(report) == [("undefined gradients", "inputs[0]", None)]
    assert report.calls[1].message == (
        "with every output's gradient undefined, the backward raised RuntimeError: x is undefined"
    )
    assert not check_function(with_hook(lambda g: g + 1e-2), (x,)).passed


def test_a_nondeterministic_backward_fails_with_the_size_of_the_difference():
    x = points((5, 5), 10)
    noisy = lambda x: NonDeterministic.apply(x, 1e-12)  # noqa: E731
    assert torch_passes(lambda x: NonDeterministic.apply(x, 0.0), (x,)) and not torch_passes(noisy, (x,))
    assert check_function(lambda x: NonDeterministic.apply(x, 0.0), (x,)).passed
    report = check_function(noisy, (x,))
    assert report.verdict == "failed" and report.failing_parameters == ("inputs[0]",)
    assert report.parameter("inputs[0]").passed  # 1e-12 is far below what finite differences see
    (call,) = [call for call in report.calls if not call.passed]
    assert call.kind == "determinism" and 0.0 < call.difference <= 1e-12 and call.tolerance == 0.0
    assert call.message.startswith("nondeterministic backward: two calls of the backward with the same cotangent")
    assert "a backward is nondeterministic in inputs[0]" in failure_table(report)
    # Within nondet_tol, as torch's test: its 1e-6 noise is allowed, and the comparison's floor holds it.
    assert torch_passes(lambda x: NonDeterministic.apply(x, 1e-6), (x,), nondet_tol=1e-5)
    assert check_function(lambda x: NonDeterministic.apply(x, 1e-6), (x,), nondet_tol=1e-5).passed
    assert not check_function(lambda x: NonDeterministic.apply(x, 1e-6), (x,)).passed
    assert not check_function(noisy, (x,), order=2).passed  # each backward of the recursion is checked
    # And gradgradcheck's: the noisy backward inside the second order's objective draws one stream.
    assert torch_passes(noisy, (x,), torch.autograd.gradgradcheck, nondet_tol=1e-5)
    assert check_function(noisy, (x,), order=2, nondet_tol=1e-5).passed


def test_batched_checks_the_backward_under_vmap_against_the_loop():
    x = points(4, 11)
    guarded = lambda x: ClippedScale.apply(x, True)  # noqa: E731
    assert torch_passes(guarded, (x,)) and not torch_passes(guarded, (x,), check_batched_grad=True)
    assert torch_passes(lambda x: ClippedScale.apply(x, False), (x,), check_batched_grad=True)
    assert check_function(guarded, (x,)).passed  # batched is off by default, as torch's check_batched_grad
    assert check_function(lambda x: ClippedScale.apply(x, False), (x,), batched=True).passed
    report = check_function(guarded, (x,), batched=True)
    assert report.parameter("inputs[0]").passed and failed_calls(report) == [("batching", "inputs[0]", None)]
    assert report.calls[-1].message.startswith(
        "the backward under vmap over 3 cotangents raised RuntimeError: Batching rule not implemented for aten::item"
    )
    # A backward that calls another Function batches as torch's own check batches it.
    assert torch_passes(lambda x: SineWithCosine.apply(x, 1.0), (x,), check_batched_grad=True)
    assert check_function(lambda x: SineWithCosine.apply(x, 1.0), (x,), order=2, batched=True).passed


def test_batched_checks_the_forward_rule_under_vmap():
    x = points(2, 12)
    batched_forward = {"check_forward_ad": True, "check_batched_forward_grad": True}
    assert torch_passes(RandomInJvp.apply, (x,), check_forward_ad=True)
    assert not torch_passes(RandomInJvp.apply, (x,), **batched_forward)
    assert check_function(RandomInJvp.apply, (x,), modes=("fwd",)).passed
    report = check_function(RandomInJvp.apply, (x,), modes=("fwd",), batched=True)
    assert failed_calls(report) == [("batching", "inputs[0]", None)]
    assert check_function(lambda x: SineWithCosine.apply(x, 1.0), (x,), modes=("fwd", "rev"), batched=True).passed


class SparseGradient(torch.autograd.Function):
    """x·scale whose backward returns its gradient as a sparse COO tensor."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return (g * ctx.scale).to_sparse(), None


def test_a_sparse_gradient_of_a_dense_input_is_checked_densified():
    # torch refuses the layout ("grad is incorrect layout"); its value is the gradient, and it is checked.
    weight = points((6, 3), 13)
    embedding = lambda w: torch.nn.functional.embedding(torch.tensor([0, 2, 2, 5]), w, sparse=True)  # noqa: E731
    assert check_function(embedding, (weight,)).passed
    assert check_function(lambda x: SparseGradient.apply(x, 2.0), (points(4, 14),)).passed
    assert check_function(lambda x: SparseGradient.apply(x, 3.0), (points(4, 14),)).failing_parameters == ("inputs[0]",)
    module = torch.nn.Embedding(6, 3, sparse=True).double()
    assert check_module(module, lambda m: (m(torch.tensor([1, 4, 4])) ** 2).sum()).passed


def test_no_differentiable_output_is_checked_against_its_zero_derivative():
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    # torch: "Numerical gradient for function expected to be zero" for the first; the others pass.
    for fn, passes in [
        (lambda x: x.detach() * 2, False),
        (lambda x: torch.tensor([float(x[0])]), False),
        (lambda x: x.argmax(), True),
        (lambda x: (), True),
        (lambda x: (x.detach() * 0 + 1,), True),
    ]:
        assert torch_passes(fn, (x,)) is passes
        assert check_function(fn, (x,)).passed is passes
        assert check_function(fn, (x,), modes=("fwd",)).passed is passes


def test_the_paths_of_every_order_and_mode_and_their_labels():
    from gradcheck_cli.check.derivatives import derivative_paths, path_label

    assert [path_label(path) for path in derivative_paths(1, ("rev",))] == ["rev"]
    assert [path_label(path) for path in derivative_paths(2, ("fwd", "rev"))] == [
        "fwd", "fwd∘fwd", "rev∘fwd", "rev", "fwd∘rev", "rev∘rev"
    ]  # fmt: skip
    assert len(derivative_paths(3, ("fwd", "rev"))) == 2 + 4 + 8
    assert path_label(("rev", "fwd", "rev")) == "rev∘fwd∘rev"


def test_the_derivative_call_options_are_for_functions_and_refused_elsewhere_in_one_line():
    import numpy as np

    from gradcheck_cli import check_gradients

    x = points(2, 15)
    with pytest.raises(InvalidArgument, match=r"^nondet_tol must be a finite number ≥ 0, got -1.0$"):
        check_function(torch.sin, (x,), nondet_tol=-1.0)
    with pytest.raises(InvalidArgument, match=r"^batched must be True or False, got 1$"):
        check_function(torch.sin, (x,), batched=1)
    with pytest.raises(InvalidArgument, match=r"^check_module's batched and nondet_tol must be False and 0.0"):
        check_module(torch.nn.Linear(2, 1).double(), lambda m: m(x).sum(), batched=True)
    with pytest.raises(InvalidArgument, match=r"^check_gradients's batched and nondet_tol must be False and 0.0"):
        check_gradients(lambda p: float(p["x"][0]), {"x": np.ones(1)}, {"x": np.ones(1)}, nondet_tol=1e-5)


def test_a_report_with_call_checks_follows_the_report_schema():
    import json

    from json_documents import validator

    report = check_function(lambda x: TwoOutputs.apply(x, "as is"), (points(3, 16),), order=2, batched=True)
    assert not report.passed and {call.kind for call in report.calls} == {
        "determinism",
        "undefined gradients",
        "batching",
    }
    document = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert [error.message for error in validator("report").iter_errors(document)] == []


# --- complex numbers, float16, sparse and mkldnn inputs (issue 33) -----------------------------
#
# Every case is verified against torch.autograd.gradcheck in the same test: the correct version
# passes both, the buggy one fails both.


class ComplexExp(torch.autograd.Function):
    """z ↦ z·exp(z), holomorphic: torch's backward is grad·conj((1 + z)·exp(z)); ``conjugated`` drops the conj."""

    @staticmethod
    def forward(ctx, z, conjugated):
        ctx.save_for_backward(z)
        ctx.conjugated = conjugated
        return z * z.exp()

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        derivative = (1 + z) * z.exp()
        return grad * (derivative if ctx.conjugated else derivative.conj()), None


class SquaredModulus(torch.autograd.Function):
    """z ↦ |z|² (a real output), backward grad·2z; ``conjugated`` returns grad·2z̄, the conjugated gradient."""

    @staticmethod
    def forward(ctx, z, conjugated):
        ctx.save_for_backward(z)
        ctx.conjugated = conjugated
        return (z * z.conj()).real

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return grad * 2 * (z.conj() if ctx.conjugated else z), None


class PolarPair(torch.autograd.Function):
    """x ↦ (cos x + i sin x, x²): a complex output and a real one; ``factor`` 1 is right."""

    @staticmethod
    def forward(ctx, x, factor):
        ctx.save_for_backward(x)
        ctx.factor = factor
        return torch.complex(x.cos(), x.sin()), x * x

    @staticmethod
    def backward(ctx, grad_complex, grad_real):
        (x,) = ctx.saved_tensors
        # ∂L/∂x = Re(grad)·(−sin x) + Im(grad)·cos x + grad_real·2x
        from_complex = -grad_complex.real * x.sin() + grad_complex.imag * x.cos()
        return ctx.factor * from_complex + grad_real * 2 * x, None


def complex_tensor(shape, seed, dtype=torch.complex128):
    generator = torch.Generator().manual_seed(seed)
    real, imag = (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1 for _ in range(2))
    return torch.complex(real, imag).to(dtype).requires_grad_()


def torch_verdict(fn, inputs, **options) -> bool:
    """torch.autograd.gradcheck's verdict (its notices about precision and sparse support silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.autograd.gradcheck(fn, inputs, raise_exception=False, check_batched_grad=False, **options)


@pytest.mark.parametrize("dtype", [torch.complex128, torch.complex64])
def test_a_complex_function_passes_and_its_conjugated_backward_fails(dtype):
    options = {} if dtype == torch.complex128 else {"atol": 1e-2, "rtol": 1e-2, "eps": 1e-3}
    for conjugated, expected in ((False, "passed"), (True, "failed")):
        z = complex_tensor((2, 3), 1, dtype)
        fn = lambda z: ComplexExp.apply(z, conjugated)  # noqa: E731
        assert torch_verdict(fn, (complex_tensor((2, 3), 1, dtype),), **options) == (expected == "passed")
        before = torch.view_as_real(z.detach()).clone()
        report = check_function(fn, (z,))
        assert torch.equal(torch.view_as_real(z.detach()), before) and z.grad is None
        assert report.verdict == expected
        assert report.parameters[0].dtype == str(dtype).removeprefix("torch.")


def test_a_conjugated_gradient_of_a_real_output_is_named_conjugate():
    for conjugated, expected in ((False, True), (True, False)):
        z = complex_tensor(5, 2)
        assert torch_verdict(lambda z: SquaredModulus.apply(z, conjugated), (z,)) is expected
    right = check_function(lambda z: SquaredModulus.apply(z, False), (complex_tensor(5, 2),))
    wrong = check_function(lambda z: SquaredModulus.apply(z, True), (complex_tensor(5, 2),), samples="all")
    assert right.passed
    assert wrong.verdict == "failed" and wrong.parameters[0].diagnosis.kind == "conjugate"
    rows = [
        line.split()[:3]
        for line in failure_table(wrong).splitlines()
        if line.startswith("inputs[0] ") and "directional" not in line
    ]
    assert rows == [["inputs[0]", f"[{k}].imag", "failed"] for k in range(5)]


def test_complex_outputs_and_a_mix_of_complex_and_real_outputs_are_checked_through_their_parts():
    x = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64).requires_grad_()
    for factor, expected in ((1.0, "passed"), (-1.0, "failed")):
        fn = lambda x: PolarPair.apply(x, factor)  # noqa: E731
        assert torch_verdict(fn, (x,)) == (expected == "passed")
        assert check_function(fn, (x,)).verdict == expected
    # autograd's own complex outputs, of a real and of a complex input, with a real output beside.
    z = complex_tensor((2, 2), 3)
    for fn, inputs in (
        (lambda x: torch.complex(x.sin(), x.cos()), (x,)),
        (lambda z: (z * z.exp(), torch.real(z) ** 2), (z,)),
        (lambda z: (z * z).sum(), (z,)),  # a 0-d complex output
    ):
        assert torch_verdict(fn, inputs) and check_function(fn, inputs).passed


def test_complex_inputs_in_forward_mode_and_at_second_order():
    z = complex_tensor(4, 4)
    assert check_function(lambda z: z * z * z, (z,), modes=("fwd", "rev")).passed
    assert check_function(lambda z: (z * z.conj()).real * z, (z,), order=2).passed


class ScaledSine(torch.autograd.Function):
    """sin x with the backward grad·factor·cos x (``factor`` 1 is right)."""

    @staticmethod
    def forward(ctx, x, factor):
        ctx.save_for_backward(x)
        ctx.factor = factor
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.factor * x.cos(), None


@pytest.mark.parametrize("shape", [(5,), (3, 4)])
def test_float16_is_probed_in_float16_and_its_verdicts_are_torchs(shape):
    # torch's gradcheck needs float16-sized options (its test_gradcheck uses eps=1e-2, atol=rtol=5e-2);
    # gradcheck's defaults are float16's own: step and tolerance ε^(1/3) = 0.0992.
    generator = torch.Generator().manual_seed(13)
    x = (torch.rand(shape, generator=generator, dtype=torch.float64) + 0.5).to(torch.float16).requires_grad_()
    loose = {"eps": 1e-2, "atol": 5e-2, "rtol": 5e-2}
    for factor, expected in ((1.0, "passed"), (2.0, "failed"), (-1.0, "failed")):
        fn = lambda x: ScaledSine.apply(x, factor)  # noqa: E731
        assert torch_verdict(fn, (x,), **loose) == (expected == "passed")
        report = check_function(fn, (x,))
        assert report.verdict == expected
        assert report.parameters[0].dtype == "float16"


class SparseSquare(torch.autograd.Function):
    """A sparse s ↦ 3·dense(s)², backward factor·s·grad on s's stored pattern (``factor`` 6 is right)."""

    @staticmethod
    def forward(ctx, s, factor):
        ctx.save_for_backward(s)
        ctx.factor = factor
        dense = s.to_dense()
        return 3 * dense * dense

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        pattern = s.coalesce() if s.layout == torch.sparse_coo else s
        return (ctx.factor * s.to_dense() * grad).sparse_mask(pattern), None


def sparse_input(layout, seed=0):
    generator = torch.Generator().manual_seed(seed)
    dense = torch.rand(4, 5, generator=generator, dtype=torch.float64)
    dense = dense * (torch.rand(4, 5, generator=generator) > 0.5)
    if layout == "coo":
        return dense.to_sparse().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's notice that CSR support is in beta
        return dense.to_sparse_csr().requires_grad_()


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_sparse_input_is_checked_on_its_stored_values_as_torchs_masked_check(layout):
    # torch's undefined-gradient check cannot run SparseSquare's backward (sparse_mask of an undefined
    # gradient): for it, torch is asked without that check.
    function = {"masked": True, "check_undefined_grad": False}
    for fn, expected, verify in (
        (lambda s: 3 * s.to_dense() ** 2, "passed", {"masked": True}),
        (lambda s: SparseSquare.apply(s, 6.0), "passed", function),
        (lambda s: SparseSquare.apply(s, 12.0), "failed", function),
    ):
        assert torch_verdict(fn, (sparse_input(layout),), **verify) == (expected == "passed")
        s = sparse_input(layout)
        values = (s._values() if layout == "coo" else s.values()).detach().clone()
        report = check_function(fn, (s,), samples="all")
        assert report.verdict == expected
        stored = s._values() if layout == "coo" else s.values()
        assert report.parameters[0].shape == tuple(values.shape) and torch.equal(stored, values)
    assert report.parameters[0].diagnosis is not None and report.parameters[0].diagnosis.factor == 2.0
    # torch.sum's backward is dense: torch's masked check compares it at the unstored elements too and
    # fails wherever one is unstored (its own test sums a sparse tensor with every element stored);
    # the derivative with respect to each stored value is 1, and passes.
    assert check_function(torch.sum, (sparse_input(layout),)).passed


def test_an_uncoalesced_sparse_input_checks_each_stored_value():
    # Entries 0, 0 and 1 stored, 1 and 2 summing at index 0: d Σ dense² / d v_k = 2·dense[index k] = 6,
    # 6, 6, times the cotangent u of the scalar output.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's notice that sparse invariants are not checked
        s = torch.sparse_coo_tensor(
            torch.tensor([[0, 0, 1]]), torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), (3,), requires_grad=True
        )
    report = check_function(lambda s: (s.to_dense() ** 2).sum(), (s,), samples="all")
    assert report.passed
    u = float(cotangent((), 0, 0))
    assert [record.comparison.analytic for record in report.parameters[0].checks] == [6 * u] * 3


def test_a_dense_check_of_a_sparse_input_is_refused_saying_why():
    fn, calls = counting(torch.sum)
    with pytest.raises(UnsupportedTensor) as caught:
        check_function(fn, (sparse_input("coo"),), masked=False)
    assert str(caught.value) == (
        "tensor 'inputs[0]' is torch.sparse_coo: masked=False asks for the derivative at its unstored elements "
        "too, which no probe can reach without storing them (a new layout); check its stored values "
        "(masked=True, the default) or pass .to_dense()"
    )
    assert calls == []
    assert check_function(torch.sum, (sparse_input("coo"),), masked=True).passed
    with pytest.raises(UnsupportedTensor, match="which forward mode does not check"):
        check_function(torch.sum, (sparse_input("coo"),), modes=("fwd",))
    with pytest.raises(UnsupportedTensor, match="which order 2 does not check: check it at order 1"):
        check_function(torch.sum, (sparse_input("coo"),), order=2)


def test_a_problem_holding_a_sparse_or_complex_tensor_reads_its_gradient_where_it_is_probed():
    s, z = sparse_input("coo", seed=3), complex_tensor(3, 5)

    def objective(parameters):
        return (parameters["s"].to_dense() ** 2).sum() + (parameters["z"].abs() ** 2).sum()

    dense_gradient = 2 * s.detach().to_dense()  # dense, of the dense shape: read at the stored indices
    for z_gradient, expected in ((2 * z.detach(), "passed"), (2 * z.detach().conj(), "failed")):
        problem = (objective, {"s": s, "z": z}, {"s": dense_gradient, "z": z_gradient})
        report = check_problem(torch_problem(problem), samples="all")
        assert report.verdict == expected
    assert report.failing_parameters == ("z",) and report.parameter("z").diagnosis.kind == "conjugate"


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="this torch has no mkldnn")
def test_an_mkldnn_input_is_checked_through_a_dense_copy_and_an_mkldnn_output_refused():
    a = torch.rand(10, dtype=torch.float32, generator=torch.Generator().manual_seed(1)).requires_grad_()
    values = torch.rand(10, dtype=torch.float32, generator=torch.Generator().manual_seed(2))
    for factor, expected in ((1.0, "passed"), (2.0, "failed")):
        fn = lambda a, m: a + ScaledSine.apply(m.to_dense(), factor)  # noqa: E731
        inputs = (a, values.to_mkldnn().requires_grad_())
        assert torch_verdict(fn, inputs, atol=1e-1, check_undefined_grad=False) == (expected == "passed")
        m = values.to_mkldnn().requires_grad_()
        report = check_function(fn, (a, m))
        assert report.verdict == expected and torch.equal(m.to_dense(), values)
    assert report.failing_parameters == ("inputs[1]",)
    with pytest.raises(
        InvalidCall, match=r"returned output 0 with layout torch._mkldnn, which gradcheck does not check"
    ):
        check_function(lambda x: x.to_mkldnn(), (a,))
    with pytest.raises(UnsupportedTensor, match="has layout torch._mkldnn"):
        check_function(lambda m: m.to_dense(), (values.to_mkldnn().requires_grad_(),), modes=("fwd",))


def test_an_unsupported_tensor_on_the_command_line_is_one_line_and_exit_status_2(tmp_path):
    path = tmp_path / "half_complex.py"
    path.write_text(
        textwrap.dedent(
            """
            import warnings
            import torch

            def problem():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    z = torch.ones(3, dtype=torch.complex32, requires_grad=True)
                return (lambda z: z * 2), (z,)
            """
        )
    )
    result = CliRunner().invoke(main, ["check", f"{path}:problem"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "Error: tensor 'inputs[0]' has dtype torch.complex32; gradcheck probes float64, float32, float16, bfloat16, "
        "complex128 and complex64 tensors; the nearest is complex64: pass .to(torch.complex64)"
    ]


@pytest.mark.parametrize("kind", ["coo", "csr", "mkldnn", "complex"])
def test_a_sparse_mkldnn_or_complex_input_is_restored_bit_for_bit_when_fn_raises(kind):
    if kind == "mkldnn" and not torch.backends.mkldnn.is_available():
        pytest.skip("this torch has no mkldnn")
    values = torch.rand(6, dtype=torch.float32, generator=torch.Generator().manual_seed(4))
    make = {
        "coo": lambda: sparse_input("coo"),
        "csr": lambda: sparse_input("csr"),
        "mkldnn": lambda: values.to_mkldnn().requires_grad_(),
        "complex": lambda: complex_tensor(4, 6),
    }[kind]
    x = make()
    dense = lambda t: torch.view_as_real(t.detach()) if t.is_complex() else t.detach().to_dense()  # noqa: E731
    saved = dense(x).clone()
    calls = []

    def fn(t):
        calls.append(1)
        if len(calls) == 6:
            raise RuntimeError("inside fn")
        return (t.to_dense() if t.layout != torch.strided else t) * 2

    with pytest.raises(RuntimeError, match="inside fn"):
        check_function(fn, (x,))
    assert torch.equal(dense(x), saved)


def test_a_correct_float32_linear_layer_of_a_million_parameters_passes_through_the_module_check():
    # nn.Linear(1000, 1000) under mse_loss: 7 of 32 coordinates were inconclusive (issue 32).
    from gradcheck_cli.torch import check_module

    torch.manual_seed(0)
    model = torch.nn.Linear(1000, 1000)
    x, y = torch.randn(32, 1000), torch.randn(32, 1000)
    report = check_module(model, lambda module: torch.nn.functional.mse_loss(module(x), y))
    assert report.verdict == "passed", [(name, record.reason) for name, record in report.failures()]


class RowScaledLinear(torch.autograd.Function):
    """x Wᵀ with a backward whose weight gradient has row ``row`` times ``factor`` (1 is right)."""

    @staticmethod
    def forward(ctx, x, weight, row, factor):
        ctx.save_for_backward(x, weight)
        ctx.row, ctx.factor = row, factor
        return x @ weight.T

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        grad_weight = grad.T @ x
        grad_weight[ctx.row] *= ctx.factor
        return grad @ weight, grad_weight, None, None


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_fast_check_fails_a_doubled_row_through_a_function_and_passes_the_right_one(dtype):
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(8, 200, generator=generator, dtype=dtype, requires_grad=True)
    weight = (torch.randn(50, 200, generator=generator, dtype=dtype) / 200**0.5).requires_grad_()
    right = check_function(lambda x, w: RowScaledLinear.apply(x, w, 3, 1.0), (x, weight), fast=True)
    assert right.passed and all(parameter.selection == "fast" for parameter in right.parameters)
    # f(θ) twice, then per input multiplier 1, and 0.1, 10 and 100 only where it cannot decide
    assert right.evaluations <= 2 + (4 if dtype == torch.float64 else 8) * 2
    wrong = check_function(lambda x, w: RowScaledLinear.apply(x, w, 3, 2.0), (x, weight), fast=True)
    assert wrong.failing_parameters == ("inputs[1]",)
    assert {check.coordinate[0] for check in wrong.parameter("inputs[1]").checks.failed()} == {3}


def test_a_fast_check_of_two_inputs_calls_fn_four_times_and_its_first_value_is_real():
    """The forward that the backward ran on gives the first f(θ); the joint direction's two probes and
    f(θ) again are the other calls. A function whose value drifts is found stateful by that first value."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    weight = torch.randn(5, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(5, generator=generator, dtype=torch.float64, requires_grad=True)
    calls = []

    def fn(weight, bias):
        calls.append(None)
        return torch.tanh(x @ weight.T + bias).sum()

    report = check_function(fn, (weight, bias), fast=True)
    assert report.passed and report.evaluations == len(calls) == 4
    assert report.parameters[0].directional.joint == ("inputs[0]", "inputs[1]")

    def drifting(weight, bias):
        calls.append(None)
        return torch.tanh(x @ weight.T + bias).sum() + 1e-3 * len(calls)

    drifted = check_function(drifting, (weight, bias), fast=True)
    assert drifted.purity.stateful and not drifted.passed
