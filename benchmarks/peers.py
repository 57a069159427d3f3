"""Against peers: checking 64 coordinates of a 10^5-parameter objective.

The objective is a realistic smooth one of cost O(n) per call: the mean
softmax cross-entropy (mean NLL, vectorized as in `_objectives.py`) of 10
rows of float64 logits over a vocabulary of n/10 classes. gradcheck's `check_gradients` checks 64
coordinates at its defaults (about two evaluations each, f(θ) once plus checkpoints, and a
directional test; the count is `report.evaluations`), and the chapter's
`sampled_tensor_gradient_check` the same number (three evaluations each); the peers need the
whole gradient:

* scipy.optimize.approx_fprime (forward differences of every coordinate, n + 1 evaluations),
* scipy.optimize.check_grad (the same, plus one call of the gradient),
* torch.autograd.gradcheck where torch is installed (central differences of
  the full Jacobian, 2n evaluations, against autograd's backward).

For scale, three cheaper checks that gather less or different evidence run
too: approx_fprime restricted to the same 64 coordinates, check_grad along
one random direction, and torch's fast_mode (one random projection).

Then the projection section (_projection.py; alone with --projection-only): our share of time
outside the objective's calls (goal ≤ 30 %) and the projection peers (torch fast_mode, JAX
check_grads, scipy's random direction) on a numpy logistic regression and a torch MLP of about
10^5 parameters each.

Then the fast section (_fast_peers.py; alone with --fast-only): the default and fast checks against a
bare loop, torch's fast_mode and JAX's check_grads on small and medium MLPs and a 10^6 layer, and how
often each fast check fails a ×2 error on one weight row.

Every timing counts its objective evaluations. With --peer-n smaller than
--n the full-gradient peers run at --peer-n and their times at n are
EXTRAPOLATED (evaluations × cost per evaluation, both measured), and the
output says so. On the reference machine this model was within 3 % for
SciPy from n = 10^4 to 10^5 but overestimated torch 1.9× (torch's gradcheck
has per-evaluation costs of its own that do not grow with n).

The script re-executes itself with glibc's malloc keeping freed memory
(see `_common.with_steady_malloc`; --natural-malloc measures without), and
prints each full peer's page faults and kernel time.

Usage: python benchmarks/peers.py [--n 100000] [--peer-n N] [--repeats 7] [--peer-repeats 1] [--natural-malloc]
       [--projection-n 100000] [--projection-repeats 5] [--projection-only]
       [--fast-repeats 7] [--fast-seeds 10] [--fast-tiny] [--fast-only]
"""

import argparse
import resource
import sys
import time

import numpy as np
import scipy
from scipy.optimize import approx_fprime, check_grad

import _fast_peers
import _projection
from _common import header, interleaved, malloc_line, median, seconds, spread, with_steady_malloc
from _objectives import mean_nll, mean_nll_gradient
from gradcheck_cli.chapter.sampled import sampled_tensor_gradient_check
from gradcheck_cli.check import check_gradients
from gradcheck_cli.engine.sampling import sample_tensor_coordinates

ROWS = 10
SAMPLES = 64
REFERENCE = f"gradcheck check_gradients, {SAMPLES} coordinates"
STEP = 1.0e-5
TOLERANCE = 1.0e-6

try:
    import torch
    import torch.nn.functional as functional
except ImportError:
    torch = None


class Problem:
    """n float64 logits as [10, n/10], targets, and counted objectives for every library."""

    def __init__(self, n: int):
        if n % ROWS:
            raise SystemExit(f"--n {n} must be a multiple of {ROWS}")
        random = np.random.default_rng(5)
        self.n = n
        self.shape = (ROWS, n // ROWS)
        self.logits = random.standard_normal(self.shape)
        self.flat = self.logits.ravel()  # a view: scipy's vector is the same memory
        self.targets = random.integers(0, self.shape[1], ROWS)
        self.evaluations = 0
        if torch is not None:
            self.torch_logits = torch.from_numpy(self.logits.copy()).requires_grad_(True)
            self.torch_targets = torch.from_numpy(self.targets)

    def objective(self, logits):
        self.evaluations += 1
        return mean_nll(logits, self.targets)

    def mapping_objective(self, parameters):
        self.evaluations += 1
        return mean_nll(parameters["logits"], self.targets)

    def flat_objective(self, vector):
        self.evaluations += 1
        return mean_nll(vector.reshape(self.shape), self.targets)

    def flat_gradient(self, vector):
        return mean_nll_gradient(vector.reshape(self.shape), self.targets).ravel()

    def torch_objective(self, logits):
        self.evaluations += 1
        return functional.cross_entropy(logits, self.torch_targets)

    def counted(self, run):
        """``run`` as a zero-argument callable that records its evaluations and its verdict."""
        outcome = {}

        def counted_run():
            self.evaluations = 0
            before = resource.getrusage(resource.RUSAGE_SELF)
            outcome["verdict"] = run()
            after = resource.getrusage(resource.RUSAGE_SELF)
            outcome["evaluations"] = self.evaluations
            # Page faults and kernel time tell a slow run on a busy machine from a slow method.
            outcome["page_faults"] = after.ru_minflt - before.ru_minflt
            outcome["system_seconds"] = after.ru_stime - before.ru_stime

        counted_run.outcome = outcome
        return counted_run


def gradcheck_contender(problem):
    """check_gradients at its defaults; its verdict and report.evaluations (checked against the count)."""

    def run():
        analytic = mean_nll_gradient(problem.logits, problem.targets)
        report = check_gradients(
            problem.mapping_objective, {"logits": problem.logits}, {"logits": analytic}, samples=SAMPLES
        )
        return f"verdict {report.verdict}, report.evaluations {report.evaluations}"

    return problem.counted(run)


def chapter_contender(problem):
    def run():
        analytic = mean_nll_gradient(problem.logits, problem.targets)
        result = sampled_tensor_gradient_check(problem.logits, analytic, STEP, TOLERANCE, SAMPLES, problem.objective)
        return f"passed={result.passed}"

    return problem.counted(run)


def full_contenders(problem):
    """The peers that compute the whole gradient (or Jacobian)."""
    analytic = mean_nll_gradient(problem.logits, problem.targets).ravel()

    def scipy_approx_fprime():
        numerical = approx_fprime(problem.flat, problem.flat_objective)
        return f"max |numerical − analytic| = {np.max(np.abs(numerical - analytic)):.2e}"

    def scipy_check_grad():
        error = check_grad(problem.flat_objective, problem.flat_gradient, problem.flat)
        return f"‖error‖₂ = {error:.2e}"

    contenders = {
        "scipy approx_fprime, all n coordinates": problem.counted(scipy_approx_fprime),
        "scipy check_grad (direction='all')": problem.counted(scipy_check_grad),
    }
    if torch is not None:

        def torch_gradcheck():
            return f"passed={torch.autograd.gradcheck(problem.torch_objective, (problem.torch_logits,))}"

        contenders["torch.autograd.gradcheck (full Jacobian)"] = problem.counted(torch_gradcheck)
    return contenders


def cheap_contenders(problem):
    """Cheaper checks with less or different evidence, for scale."""
    flat_indices = np.array([sample.flat_index for sample in sample_tensor_coordinates(problem.shape, SAMPLES)])
    original = problem.flat[flat_indices].copy()
    analytic = mean_nll_gradient(problem.logits, problem.targets).ravel()

    def restricted_objective(values):
        problem.flat[flat_indices] = values
        try:
            return problem.objective(problem.logits)
        finally:
            problem.flat[flat_indices] = original

    def scipy_restricted():
        numerical = approx_fprime(original.copy(), restricted_objective)
        return f"max |numerical − analytic| = {np.max(np.abs(numerical - analytic[flat_indices])):.2e}"

    def scipy_random_direction():
        error = check_grad(
            problem.flat_objective,
            problem.flat_gradient,
            problem.flat,
            direction="random",
            rng=np.random.default_rng(0),
        )
        return f"|error| = {error:.2e}"

    contenders = {
        f"the chapter's check, {SAMPLES} coordinates": chapter_contender(problem),
        f"scipy approx_fprime, the chapter's {SAMPLES} coordinates": problem.counted(scipy_restricted),
        "scipy check_grad (direction='random')": problem.counted(scipy_random_direction),
    }
    if torch is not None:

        def torch_fast():
            gradcheck = torch.autograd.gradcheck
            return f"passed={gradcheck(problem.torch_objective, (problem.torch_logits,), fast_mode=True)}"

        contenders["torch.autograd.gradcheck fast_mode=True"] = problem.counted(torch_fast)
    return contenders


def call_cost(problem, repeats=51):
    """Median seconds of one objective evaluation: (numpy NLL, torch cross-entropy or None)."""
    numpy_cost = median(
        interleaved({"numpy": lambda: problem.objective(problem.logits)}, repeats, warmup=3)["numpy"]["wall"]
    )
    torch_cost = None
    if torch is not None:
        with torch.no_grad():
            torch_cost = median(
                interleaved({"torch": lambda: problem.torch_objective(problem.torch_logits)}, repeats, warmup=3)[
                    "torch"
                ]["wall"]
            )
    return numpy_cost, torch_cost


def evaluations_at(label, measured, measured_n, n):
    """Evaluations at ``n`` from the count at ``measured_n``: n + c for scipy, 2n + c for torch."""
    per_coordinate = 2 if label.startswith("torch") else 1
    return measured - per_coordinate * measured_n + per_coordinate * n


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**5, help="parameters of the objective")
    parser.add_argument(
        "--peer-n", type=int, default=None, help="run the full-gradient peers at this n and extrapolate"
    )
    parser.add_argument("--repeats", type=int, default=7, help="interleaved runs of gradcheck and the cheap checks")
    parser.add_argument("--peer-repeats", type=int, default=1, help="runs of each full-gradient peer")
    parser.add_argument("--natural-malloc", action="store_true", help="leave glibc's malloc trimming as it is")
    parser.add_argument("--projection-n", type=int, default=10**5, help="weights of the logistic regression")
    parser.add_argument(
        "--projection-repeats", type=int, default=5, help="interleaved rounds of the projection section"
    )
    parser.add_argument(
        "--projection-only", action="store_true", help="only the projection peers and our time outside the objective"
    )
    parser.add_argument("--fast-only", action="store_true", help="only the fast section (_fast_peers.py)")
    parser.add_argument("--fast-repeats", type=int, default=7, help="interleaved rounds of the fast section")
    parser.add_argument("--fast-seeds", type=int, default=10, help="layers of the ×2-row rows")
    parser.add_argument("--fast-tiny", action="store_true", help="the fast section on tiny models (a smoke run)")
    return parser.parse_args()


def print_setting(problem, n: int) -> tuple:
    """The header, the objective and its cost per evaluation; returns the costs (numpy, torch or None)."""
    versions = {"scipy": scipy.__version__, "torch": torch.__version__ if torch is not None else "not installed"}
    if torch is not None:
        versions["torch threads"] = torch.get_num_threads()
    header(f"peers: checking {SAMPLES} coordinates of a {n}-parameter objective", **versions)
    print(malloc_line())
    print(
        f"objective: mean softmax cross-entropy of {list(problem.shape)} float64 logits (_objectives.mean_nll"
        + ("; torch: F.cross_entropy" if torch is not None else "")
        + "), O(n) per evaluation"
    )
    if torch is None:
        print(
            "torch not installed: torch.autograd.gradcheck not measured (pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu to include it)"
        )
    numpy_cost, torch_cost = call_cost(problem)
    print(
        f"one evaluation at n={n}: numpy {seconds(numpy_cost)}"
        + (f", torch {seconds(torch_cost)}" if torch_cost is not None else "")
    )
    return numpy_cost, torch_cost


def peer_rows(peers, peer_durations, peer_problem, n: int, costs: tuple) -> list:
    """One row per full-gradient peer, its times extrapolated to ``n`` when it ran at another size."""
    peer_n = peer_problem.n
    if peer_n != n:
        peer_numpy_cost, peer_torch_cost = call_cost(peer_problem)
    rows = []
    for label, run in peers.items():
        evaluations, times, note = run.outcome["evaluations"], peer_durations[label], ""
        if peer_n != n:
            evaluations_n = evaluations_at(label, evaluations, peer_n, n)
            cost_ratio = costs[1] / peer_torch_cost if label.startswith("torch") else costs[0] / peer_numpy_cost
            times = [value * evaluations_n / evaluations * cost_ratio for value in times]
            note = (
                f"  EXTRAPOLATED from n={peer_n} ({evaluations} evaluations, {seconds(median(peer_durations[label]))})"
            )
            evaluations = evaluations_n
        note += (
            f"; last run: {run.outcome['page_faults']} page faults, {run.outcome['system_seconds']:.1f} s in the kernel"
        )
        rows.append((label, times, evaluations, run.outcome["verdict"], note))
    return rows


def main():
    arguments = parse_arguments()
    with_steady_malloc(arguments.natural_malloc)
    if arguments.fast_only:
        header("peers: the fast check beside the projection peers", scipy=scipy.__version__, **optional_versions())
        _fast_peers.run(arguments.fast_repeats, arguments.fast_tiny, arguments.fast_seeds)
        return 0
    if arguments.projection_only:
        header("peers: projection checks of about 10^5 parameters", scipy=scipy.__version__)
        print(malloc_line())
        _projection.run(arguments.projection_n, arguments.projection_repeats)
        return 0
    peer_n = arguments.peer_n or arguments.n
    problem = Problem(arguments.n)
    costs = print_setting(problem, arguments.n)

    started = time.perf_counter()
    gradcheck = gradcheck_contender(problem)
    contenders = {REFERENCE: gradcheck, **cheap_contenders(problem)}
    # Wall time throughout: torch runs two threads, so this process's CPU time would overstate it.
    durations = {label: times["wall"] for label, times in interleaved(contenders, arguments.repeats).items()}

    peer_problem = problem if peer_n == arguments.n else Problem(peer_n)
    peers = full_contenders(peer_problem)
    # Each full peer run sits between two gradcheck runs, so all share the same stretch of machine.
    peer_durations = {
        label: times["wall"]
        for label, times in interleaved({**peers, "gradcheck": gradcheck}, arguments.peer_repeats, warmup=0).items()
    }
    durations[REFERENCE] += peer_durations.pop("gradcheck")
    reference = median(durations[REFERENCE])

    rows = [
        (label, durations[label], run.outcome["evaluations"], run.outcome["verdict"], "")
        for label, run in contenders.items()
    ]
    rows += peer_rows(peers, peer_durations, peer_problem, arguments.n, costs)
    print(
        f"interleaved: {arguments.repeats} runs of gradcheck and the cheap checks, "
        f"{arguments.peer_repeats} of each full-gradient peer (median, range); ratio = time / gradcheck's median"
    )
    width = max(len(row[0]) for row in rows)
    for label, times, evaluations, verdict_text, note in rows:
        print(f"  {label:<{width}}  {spread(times)}")
        print(
            f"  {'':<{width}}  evaluations {evaluations}, ratio {median(times) / reference:.3g}, {verdict_text}{note}"
        )
    print(f"(peer timing took {seconds(time.perf_counter() - started)})")
    _projection.run(arguments.projection_n, arguments.projection_repeats)
    _fast_peers.run(arguments.fast_repeats, arguments.fast_tiny, arguments.fast_seeds)
    return 0


def optional_versions() -> dict:
    """torch's and JAX's versions, or "not installed"."""
    versions = {"torch": torch.__version__ if torch is not None else "not installed"}
    versions["jax"] = _fast_peers.jax.__version__ if _fast_peers.jax is not None else "not installed"
    return versions


if __name__ == "__main__":
    sys.exit(main())
