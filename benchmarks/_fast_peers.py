"""peers.py's fast section: gradcheck's default and fast checks beside a bare loop and the projection peers.

Models, float64 unless said, the mean cross-entropy of a batch of 32 through tanh layers:

* small MLP 32-24-10 (1,042 parameters), medium MLP 256-256-128-10 (99,978), and one dense layer
  1000-1000 (1,001,000);
* in numpy (hand-written backward), in torch (``fn(*tensors)``, torch on one thread) and in JAX
  (``fn(*arrays)``, un-jitted, as ``check_grads`` takes it).

Rows, each timed in interleaved rounds (medians of the per-round ratios, wall time):

* torch: ``gradcheck_cli.torch.check_function`` at its defaults and with ``fast=True``, against
  ``torch.autograd.gradcheck(fn, inputs, fast_mode=True)`` (and at its defaults, the full Jacobian, on
  the small MLP only), calls of ``fn`` counted; goal: fast ≤ 1.0× fast_mode on the medium MLP in at
  most 2 + 4 × inputs calls;
* the ×2 row: a dense layer whose backward (a torch Function) doubles one whole row of the weight's
  gradient, at 10⁵ (100 × 1000) and 10⁶ (1000 × 1000) weights, over seeds: how often each fast check
  fails it;
* JAX: ``gradcheck_cli.jax.check_function`` at its defaults against a bare loop making its calls of
  the same function (θ ± h written into a numpy leaf, ``fn(*leaves)``, the value read; goal ≤ 1.3), and
  with ``fast=True`` against ``jax.test_util.check_grads(fn, args, order=1, modes=("rev",))`` (goal ≤
  1.0); the float32 medium MLP's verdicts;
* numpy: ``check_gradients`` at its defaults on the small MLP in float64 and float32 against a bare
  perturb/call/restore loop over the same coordinates (2 calls each and f(θ)): time (goal ≤ 2) and,
  in float32, calls (goal ≤ 1.3); ``check_problem`` of examples/mlp.py's problem (goal ≤ 4 ms).

Nothing is asserted.
"""

import math
import sys
import time

import numpy as np

import _projection
from _common import REPOSITORY, interleaved, median, seconds, verdict
from _projection import Timed
from gradcheck_cli.check import check_gradients

SIZES = {"small": (32, 24, 10), "medium": (256, 256, 128, 10), "layer": (1000, 1000)}
BATCH = 32

torch, jax = _projection.torch, _projection.jax  # None where not installed
if torch is not None:
    from _projection import functional
    from gradcheck_cli.torch import check_function as torch_check
if jax is not None:
    from _projection import check_grads, jnp
    from gradcheck_cli.jax import check_function as jax_check


def numpy_model(sizes: tuple, dtype, seed: int = 3) -> tuple:
    """(layers [W, b, ...] as numpy arrays, inputs, targets) of an MLP of ``sizes``."""
    random = np.random.default_rng(seed)
    layers = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        layers += [random.standard_normal((fan_out, fan_in)) / math.sqrt(fan_in), 0.1 * random.standard_normal(fan_out)]
    inputs = random.standard_normal((BATCH, sizes[0]))
    targets = random.integers(0, sizes[-1], BATCH)
    return [layer.astype(dtype) for layer in layers], inputs.astype(dtype), targets


def logits(values, x, tanh):
    """The MLP's logits: x through each layer (W, b) of ``values``, ``tanh`` between them."""
    hidden = x
    for k in range(0, len(values), 2):
        hidden = hidden @ values[k].T + values[k + 1]
        if k + 2 < len(values):
            hidden = tanh(hidden)
    return hidden


def numpy_loss_and_gradients(layers: list, inputs, targets) -> tuple:
    """The mean cross-entropy and its gradient (hand-written backward), in the layers' dtype."""
    activations, hidden = [inputs], inputs
    for k in range(0, len(layers), 2):
        hidden = hidden @ layers[k].T + layers[k + 1]
        if k + 2 < len(layers):
            hidden = np.tanh(hidden)
            activations.append(hidden)
    shifted = hidden - hidden.max(axis=1, keepdims=True)
    log_normalizer = np.log(np.exp(shifted).sum(axis=1))
    rows = np.arange(BATCH)
    loss = float(np.mean(log_normalizer - shifted[rows, targets]))
    delta = np.exp(shifted - log_normalizer[:, None])
    delta[rows, targets] -= 1
    delta /= BATCH
    gradients = [None] * len(layers)
    for k in range(len(layers) - 2, -1, -2):
        below = activations[k // 2]
        gradients[k], gradients[k + 1] = delta.T @ below, delta.sum(axis=0)
        if k:
            delta = (delta @ layers[k]) * (1 - below * below)
    return loss, gradients


def bare_loop(arrays: list, coordinates: list, call, step: float, calls: int | None = None):
    """f(θ), then for each (array index, flat offset): θ ± h written in place, ``call()``, θ written back;
    with ``calls``, the coordinates taken again in turn until that many calls are made."""
    count = 1 + 2 * len(coordinates) if calls is None else calls
    plan = [(coordinates[k // 2 % len(coordinates)], step if k % 2 else -step) for k in range(count - 1)]

    def run():
        values = [call()]
        for (which, offset), shift in plan:
            flat = arrays[which].reshape(-1)
            original = flat[offset]
            flat[offset] = original + shift
            values.append(call())
            flat[offset] = original
        return values

    return run


def checked_coordinates(report, names: list) -> list:
    """(array index, flat offset) of every coordinate the report checked."""
    return [
        (names.index(parameter.name), check.flat_index) for parameter in report.parameters for check in parameter.checks
    ]


def ratio_line(label: str, durations: dict, ours: str, theirs: str, goal=None) -> float:
    """``label``: ours ÷ theirs, the median of the per-round ratios (and the goal, when given)."""
    ratios = [a / b for a, b in zip(durations[ours]["wall"], durations[theirs]["wall"])]
    value = median(ratios)
    goal_text = "" if goal is None else f"   {verdict(value, goal)}"
    print(f"    {label}: {value:.2f}× (range {min(ratios):.2f}–{max(ratios):.2f}){goal_text}")
    return value


def numpy_rows(repeats: int, sizes: tuple) -> None:
    """The small MLP's default check ÷ a bare loop over its coordinates, float64 and float32."""
    for dtype in (np.float64, np.float32):
        numpy_row(repeats, sizes, dtype)


def numpy_row(repeats: int, sizes: tuple, dtype) -> None:
    """One dtype's row of :func:`numpy_rows`."""
    layers, inputs, targets = numpy_model(sizes, dtype)
    names = [f"p{k}" for k in range(len(layers))]
    parameters = dict(zip(names, layers))
    counted = Timed(lambda values: numpy_loss_and_gradients([values[n] for n in names], inputs, targets)[0])
    gradients = dict(zip(names, numpy_loss_and_gradients(layers, inputs, targets)[1]))
    report = check_gradients(counted, parameters, gradients)
    coordinates = checked_coordinates(report, names)
    loop = bare_loop(layers, coordinates, lambda: counted(parameters), float(np.finfo(dtype).eps ** (1 / 3)))
    calls = report.evaluations
    durations = interleaved({"check": lambda: check_gradients(counted, parameters, gradients), "loop": loop}, repeats)
    name = np.dtype(dtype).name
    print(
        f"  numpy small MLP {name}: check_gradients {seconds(median(durations['check']['wall']))}, {calls} calls, "
        f"{report.verdict}; bare loop {1 + 2 * len(coordinates)} calls"
    )
    ratio_line("time ÷ bare loop", durations, "check", "loop", 2.0)
    calls_ratio = calls / (1 + 2 * len(coordinates))
    goal = f"   {verdict(calls_ratio, 1.3)}" if dtype == np.float32 else ""
    print(f"    calls ÷ bare loop's: {calls_ratio:.2f}×{goal}")


def example_row(repeats: int) -> None:
    """``check_problem`` of examples/mlp.py's correct problem, at its defaults and fast."""
    from gradcheck_cli import check_problem, load_problem

    problem = load_problem(str(REPOSITORY / "examples" / "mlp.py") + ":problem")
    runs = {"default": lambda: check_problem(problem), "fast": lambda: check_problem(problem, fast=True)}
    durations = interleaved(runs, 5 * repeats)
    default, fast = (median(durations[label]["wall"]) for label in runs)
    goal = verdict(default * 1e3, 4.0, unit=" ms")
    print(
        f"  check_problem(examples/mlp.py:problem): {seconds(default)} at its defaults   {goal}; fast {seconds(fast)}"
    )


def torch_model(sizes: tuple, dtype, seed: int = 3) -> tuple:
    """(counted fn(*tensors) → loss, the tensors requiring grad) of an MLP of ``sizes`` in torch."""
    layers, inputs, targets = numpy_model(sizes, np.float64, seed)
    tensors = tuple(torch.tensor(layer, dtype=dtype).requires_grad_() for layer in layers)
    x, t = torch.tensor(inputs, dtype=dtype), torch.tensor(targets)

    def loss(*values):
        return functional.cross_entropy(logits(values, x, torch.tanh), t)

    return Timed(loss), tensors


def torch_rows(repeats: int, models: dict) -> None:
    """Default and fast check ÷ torch's fast_mode (and default, small only), calls counted."""
    torch.set_num_threads(1)
    for name, sizes in models.items():
        torch_row(repeats, name, sizes)


def torch_row(repeats: int, name: str, sizes: tuple) -> None:
    """One model's row of :func:`torch_rows`."""
    fn, tensors = torch_model(sizes, torch.float64)
    runs = {
        "default": lambda: torch_check(fn, tensors).verdict,
        "fast": lambda: torch_check(fn, tensors, fast=True).verdict,
        "fast_mode": lambda: torch.autograd.gradcheck(fn, tensors, fast_mode=True),
    }
    if name == "small":
        runs["torch default"] = lambda: torch.autograd.gradcheck(fn, tensors)
    outcomes = {}
    for label, run in runs.items():
        fn.calls = 0
        outcomes[label] = (run(), fn.calls)
    durations = interleaved(runs, repeats if name != "small" else max(1, repeats // 2))
    parameters = sum(tensor.numel() for tensor in tensors)
    print(f"  torch {name} {'-'.join(map(str, sizes))} ({parameters} parameters, {len(tensors)} inputs), float64:")
    for label, (outcome, calls) in outcomes.items():
        print(f"    {label}: {seconds(median(durations[label]['wall']))}, {calls} calls of fn, {outcome}")
    goal = 1.0 if name == "medium" else None
    ratio_line("gradcheck fast ÷ torch fast_mode", durations, "fast", "fast_mode", goal)
    ratio_line("gradcheck default ÷ torch fast_mode", durations, "default", "fast_mode")
    if name == "medium":
        calls, limit = outcomes["fast"][1], 2 + 4 * len(tensors)
        print(f"    fast calls {calls} against 2 + 4 × inputs = {limit}: {'met' if calls <= limit else 'MISSED'}")


def doubled_row_layer(outputs: int, inputs: int, seed: int) -> tuple:
    """(fn(x, W) → ½‖xWᵀ − t‖²/batch whose backward doubles row 3 of W's gradient, (x, W))."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, inputs, generator=generator, dtype=torch.float64)
    weight = (
        torch.randn(outputs, inputs, generator=generator, dtype=torch.float64) / math.sqrt(inputs)
    ).requires_grad_()
    targets = torch.randn(BATCH, outputs, generator=generator, dtype=torch.float64)

    class DoubledRow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, weight):
            ctx.save_for_backward(weight)
            return x @ weight.T

        @staticmethod
        def backward(ctx, grad):
            grad_weight = grad.T @ x
            grad_weight[3] *= 2
            return grad_weight

    return (lambda weight: ((DoubledRow.apply(weight) - targets) ** 2).sum() / (2 * BATCH)), (weight,)


def fast_mode_verdict(fn, arguments) -> bool:
    """torch's fast_mode verdict, without the slow full-Jacobian check it then runs to word a failure
    (2 calls per weight: hours at 10⁶), which is patched out: the verdict is fast_mode's own."""
    module = sys.modules["torch.autograd.gradcheck"]

    slow = module._run_slow_mode_and_get_error
    module._run_slow_mode_and_get_error = lambda *arguments, **keywords: ""
    try:
        return torch.autograd.gradcheck(fn, arguments, fast_mode=True, raise_exception=False)
    finally:
        module._run_slow_mode_and_get_error = slow


def doubled_row_mlp(sizes: tuple, seed: int) -> tuple:
    """(fn(*tensors), tensors) of the MLP of ``sizes`` whose first layer's backward (a torch Function)
    doubles row 3 of its weight's gradient."""
    fn, tensors = torch_model(sizes, torch.float64, seed)

    class DoubledRow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, weight):
            return weight.clone()

        @staticmethod
        def backward(ctx, grad):
            grad = grad.clone()
            grad[3] *= 2
            return grad

    return (lambda first, *rest: fn(DoubledRow.apply(first), *rest)), tensors


def doubled_row_rows(seeds: int, shapes: tuple, sizes: tuple) -> None:
    """How often each fast check fails the ×2 row, over ``seeds`` layers and MLPs."""
    ours = theirs = 0
    for seed in range(seeds):
        fn, arguments = doubled_row_mlp(sizes, seed)
        ours += not torch_check(fn, arguments, fast=True).passed
        theirs += not fast_mode_verdict(fn, arguments)
    parameters = sum(tensor.numel() for tensor in arguments)
    print(
        f"  ×2 on row 3 of the first weight of the MLP {'-'.join(map(str, sizes))} ({parameters} parameters), "
        f"{seeds} seeds: gradcheck fast failed {ours}/{seeds}, torch fast_mode failed {theirs}/{seeds}"
    )
    for outputs, inputs in shapes:
        ours = theirs = 0
        for seed in range(seeds):
            fn, arguments = doubled_row_layer(outputs, inputs, seed)
            ours += not torch_check(fn, arguments, fast=True).passed
            theirs += not fast_mode_verdict(fn, arguments)
        print(
            f"  ×2 on row 3 of a {outputs} × {inputs} weight ({outputs * inputs} parameters), {seeds} seeds: "
            f"gradcheck fast failed {ours}/{seeds}, torch fast_mode failed {theirs}/{seeds}"
        )


def jax_rows(repeats: int, sizes: tuple) -> None:
    """The adapter's default check ÷ a bare loop of its calls; fast ÷ check_grads; float32's verdicts."""
    layers, inputs, targets = numpy_model(sizes, np.float64)
    x, t = jnp.asarray(inputs), jnp.asarray(targets)

    def loss(*values):
        return -jnp.mean(jax.nn.log_softmax(logits(values, x, jnp.tanh))[jnp.arange(BATCH), t])

    fn = Timed(loss)
    arrays = tuple(jnp.asarray(layer) for layer in layers)
    report = jax_check(fn, arrays)
    calls, leaves = fn.calls, [np.array(layer) for layer in layers]
    names = [parameter.name for parameter in report.parameters]
    coordinates = [(names.index(p.name), check.flat_index) for p in report.parameters for check in p.checks]
    loop = bare_loop(leaves, coordinates, lambda: float(fn(*leaves)), 6.0e-6, calls)
    fn.calls = 0
    jax_check(fn, arrays, fast=True)
    fast_calls, fn.calls = fn.calls, 0
    check_grads(fn, arrays, order=1, modes=("rev",))
    peer_calls = fn.calls
    runs = {
        "default": lambda: jax_check(fn, arrays),
        "loop": loop,
        "fast": lambda: jax_check(fn, arrays, fast=True),
        "check_grads": lambda: check_grads(fn, arrays, order=1, modes=("rev",)),
    }
    durations = interleaved(runs, repeats)
    print(f"  JAX medium MLP {'-'.join(map(str, sizes))}, float64, un-jitted:")
    print(
        f"    default {seconds(median(durations['default']['wall']))} ({calls} calls of fn, {report.verdict}); "
        f"bare loop of as many calls {seconds(median(durations['loop']['wall']))}; "
        f"fast {seconds(median(durations['fast']['wall']))} ({fast_calls} calls of fn); "
        f"check_grads {seconds(median(durations['check_grads']['wall']))} ({peer_calls} calls of fn)"
    )
    ratio_line("default ÷ bare loop", durations, "default", "loop", 1.3)
    ratio_line("fast ÷ check_grads", durations, "fast", "check_grads", 1.0)
    single = tuple(jnp.asarray(layer, dtype=jnp.float32) for layer in layers)
    verdicts = [jax_check(loss, single, **options).verdict for options in ({}, {"fast": True})]
    print(f"    float32: default {verdicts[0]}, fast {verdicts[1]}")


def run(repeats: int, small: bool = False, seeds: int = 10) -> None:
    """The fast section of peers.py; ``small``: tiny models (a smoke run)."""
    started = time.perf_counter()
    models = dict(SIZES) if not small else {"small": (6, 5, 3), "medium": (8, 6, 4, 3), "layer": (20, 20)}
    shapes = ((100, 1000), (1000, 1000)) if not small else ((10, 20),)
    print(f"fast checks against a bare loop and the projection peers, {repeats} rounds")
    numpy_rows(repeats, models["small"])
    example_row(repeats)
    if torch is None:
        print("  torch not installed: the torch rows are not measured")
    else:
        torch_rows(repeats, models)
        doubled_row_rows(seeds, shapes, models["medium"])
    if jax is None:
        print("  jax not installed: the JAX rows are not measured")
    else:
        jax_rows(repeats, models["medium"])
    print(f"(the fast section took {seconds(time.perf_counter() - started)})")
