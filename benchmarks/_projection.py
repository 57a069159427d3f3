"""peers.py's projection section: our share of time outside the objective's calls, and the projection peers.

Two models of about 10^5 parameters, float64:

* a numpy logistic regression, 10^5 weights over 64 rows (mean log(1 + exp(−y·Xw)), its gradient
  by hand), checked by ``check_gradients`` at its defaults; peers: scipy's ``check_grad`` along a
  random direction and JAX's ``check_grads`` (``order=1, modes=("rev",)``) on the same loss in
  jax.numpy;
* a torch MLP 256 → 256 → 128 → 10 (tanh; 99,978 parameters, six tensors), the mean cross-entropy of
  a batch of 32, checked by ``gradcheck_cli.torch.check_module`` at its defaults; peer:
  ``torch.autograd.gradcheck(..., fast_mode=True)`` on the same loss of the six tensors.

Every objective is timed call by call (a ``Timed`` wrapper: the loss itself, for torch the user's
``loss_fn(module)``): "outside" is a check's time less the time inside those calls, everything the
harness adds (for torch this includes the one backward that computes the analytic gradient). The
goal is outside ≤ 30 % of our time. Wall time (torch runs its own threads), interleaved rounds,
medians; torch on one thread, as in torch_peers.py. Nothing is asserted.
"""

import math
import time

import numpy as np
from scipy.optimize import check_grad
from scipy.special import expit

from _common import interleaved, median, seconds, verdict
from gradcheck_cli.check import check_gradients

OUTSIDE_GOAL = 0.30
ROWS = 64

try:
    import torch
    import torch.nn.functional as functional

    from gradcheck_cli.torch import check_module
except ImportError:
    torch = None

try:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.test_util import check_grads
except ImportError:
    jax = None


class Timed:
    """``function``, its calls counted and the seconds spent inside them summed."""

    def __init__(self, function):
        self.function, self.calls, self.seconds = function, 0, 0.0

    def __call__(self, *arguments):
        started = time.perf_counter()
        try:
            return self.function(*arguments)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1

    def reset(self):
        self.calls, self.seconds = 0, 0.0


def logistic_problem(n: int) -> tuple:
    """(ours, peers, timed objective): zero-argument runs of each checker on the logistic regression."""
    random = np.random.default_rng(11)
    features = random.standard_normal((ROWS, n)) / math.sqrt(n)
    labels = random.choice([-1.0, 1.0], ROWS)
    weights = random.standard_normal(n)

    def loss(w):
        return float(np.mean(np.logaddexp(0.0, -labels * (features @ w))))

    def gradient(w):
        return features.T @ (-labels * expit(-labels * (features @ w))) / ROWS

    timed = Timed(loss)
    analytic = gradient(weights)

    def ours():
        report = check_gradients(lambda parameters: timed(parameters["w"]), {"w": weights}, {"w": analytic})
        return report.verdict

    peer_loss = Timed(loss)

    def scipy_random():
        return (
            f"|error| {check_grad(peer_loss, gradient, weights, direction='random', rng=np.random.default_rng(0)):.1e}"
        )

    peers = {"scipy check_grad, direction='random'": (scipy_random, peer_loss)}
    if jax is not None:
        jax_features, jax_labels = jnp.asarray(features), jnp.asarray(labels)
        jax_loss = Timed(lambda w: jnp.mean(jnp.logaddexp(0.0, -jax_labels * (jax_features @ w))))
        jax_weights = jnp.asarray(weights)

        def jax_check():
            check_grads(jax_loss, (jax_weights,), order=1, modes=("rev",))
            return "passed"

        peers['jax check_grads, order=1, modes=("rev",)'] = (jax_check, jax_loss)
    return ours, peers, timed


def mlp_problem() -> tuple:
    """(ours, peers, timed loss_fn, parameter count) on the torch MLP, torch on one thread."""
    torch.set_num_threads(1)  # as torch_peers.py: two threads on a shared 2-core machine only contend
    generator = torch.Generator().manual_seed(3)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 256), torch.nn.Tanh(), torch.nn.Linear(256, 128), torch.nn.Tanh(), torch.nn.Linear(128, 10)
    ).double()
    inputs = torch.randn(32, 256, generator=generator, dtype=torch.float64)
    targets = torch.randint(0, 10, (32,), generator=generator)
    timed = Timed(lambda module: functional.cross_entropy(module(inputs), targets))

    def ours():
        return check_module(model, timed).verdict

    names = [name for name, _ in model.named_parameters()]
    tensors = tuple(parameter.detach().clone().requires_grad_(True) for parameter in model.parameters())
    peer_loss = Timed(
        lambda *values: functional.cross_entropy(
            torch.func.functional_call(model, dict(zip(names, values)), (inputs,)), targets
        )
    )

    def fast_mode():
        return f"passed={torch.autograd.gradcheck(peer_loss, tensors, fast_mode=True)}"

    parameters = sum(parameter.numel() for parameter in model.parameters())
    return ours, {"torch.autograd.gradcheck fast_mode=True": (fast_mode, peer_loss)}, timed, parameters


def measure(title: str, ours, peers: dict, timed: Timed, repeats: int) -> float:
    """Print our time, our share outside the objective's calls and each peer's time; returns the share."""
    shares = []

    def our_run():
        timed.reset()
        started = time.perf_counter()
        ours.outcome = ours()
        elapsed = time.perf_counter() - started
        shares.append((elapsed - timed.seconds) / elapsed)
        ours.calls = timed.calls

    runs, outcomes = {"gradcheck": our_run}, {}
    for label, (run, counted) in peers.items():

        def peer_run(run=run, counted=counted, label=label):
            counted.reset()
            outcome = run()
            outcomes[label] = (outcome, counted.calls)

        runs[label] = peer_run
    durations = {label: times["wall"] for label, times in interleaved(runs, repeats, warmup=1).items()}
    shares = shares[1:]  # the warm-up run is not counted
    ours_time = median(durations["gradcheck"])
    share = median(shares)
    print(f"  {title}")
    print(
        f"    gradcheck at its defaults: {seconds(ours_time)}, {ours.calls} objective calls, {ours.outcome}; "
        f"outside the objective's calls {share:.1%} (range {min(shares):.1%}–{max(shares):.1%})   "
        f"{verdict(share * 100, OUTSIDE_GOAL * 100, unit=' %')}"
    )
    for label, (outcome, calls) in outcomes.items():
        peer_time = median(durations[label])
        print(
            f"    {label}: {seconds(peer_time)}, {calls} objective calls, {outcome}; "
            f"gradcheck ÷ it {ours_time / peer_time:.2f} in time, {ours.calls / max(calls, 1):.1f} in calls"
        )
    return share


def run(n: int, repeats: int) -> None:
    """The projection section of peers.py."""
    print(f"projection peers and our time outside the objective's calls (goal ≤ {OUTSIDE_GOAL:.0%}), {repeats} rounds")
    ours, peers, timed = logistic_problem(n)
    measure(f"numpy logistic regression, {n} weights, {ROWS} rows", ours, peers, timed, repeats)
    if torch is None:
        print("  torch not installed: the torch MLP is not measured")
        return
    ours, peers, timed, parameters = mlp_problem()
    measure(f"torch MLP 256-256-128-10, {parameters} parameters, batch 32", ours, peers, timed, repeats)
