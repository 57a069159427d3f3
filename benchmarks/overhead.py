"""Harness overhead: the sampled tensor check against a bare loop making the same calls.

1. The mean NLL over [64, 50257] float64 logits, 64 sampled coordinates:
   `sampled_tensor_gradient_check` against a bare loop that writes the same
   probes fl(θ−h), θ, fl(θ+h) into the array in place, calls the objective
   and restores the element (3·64 calls each). Goal: ratio ≤ 1.02. The
   objective is the vectorized NLL of `_objectives.py` (about 6 ms a call);
   --library-nll uses `gradcheck_cli.nll.indexed_mean_nll`, the same loss in
   libm arithmetic (about 0.2 s a call), against which any harness is noise.
2. Per-probe overhead with a trivial objective: (check − bare loop) / probes,
   in microseconds. Goal ≤ 3 µs.

Usage: python benchmarks/overhead.py [--repeats 9] [--probe-repeats 31] [--probe-samples 1024] [--library-nll]
       [--natural-malloc]
"""

import argparse
import sys

import numpy as np

from _common import header, interleaved, malloc_line, median, spread, verdict, with_steady_malloc
from _objectives import mean_nll, mean_nll_gradient

from gradcheck_cli.nll import indexed_mean_nll
from gradcheck_cli.tensors import sample_tensor_coordinates, sampled_tensor_gradient_check

NLL_SHAPE = (64, 50257)
NLL_SAMPLES = 64
STEP = 1.0e-5
TOLERANCE = 1.0e-6
RATIO_GOAL = 1.02
PROBE_GOAL_US = 3.0


def bare_loop(parameters, samples, step, objective, python_floats=False):
    """The same 3·S objective calls with in-place perturbation and restore, and nothing else.

    With ``python_floats`` the probes are Python floats, as the harness writes
    them, instead of numpy scalars: an equivalent loop whose timing against
    the first shows how much two equivalent code paths differ on this machine.
    """
    coordinates = [sample.coordinate for sample in sample_tensor_coordinates(parameters.shape, samples)]

    def run():
        values = []
        for index in coordinates:
            original = float(parameters[index]) if python_floats else parameters[index]
            for probe in (original - step, original, original + step):
                parameters[index] = probe
                values.append(objective(parameters))
                parameters[index] = original
        return values

    return run


def gradcheck_run(parameters, analytic, samples, objective):
    def run():
        return sampled_tensor_gradient_check(parameters, analytic, STEP, TOLERANCE, samples, objective)

    return run


def report(durations, bare_label="bare loop", checked_label="gradcheck", per=None):
    """Print both clocks' medians and ratios; return the CPU-time medians (bare, checked) and paired ratio.

    Each round runs both loops back to back, so the median of the per-round
    ratios cancels the slow drifts of a shared machine that the ratio of
    medians still carries; it is the figure compared with the goal.
    """
    for label in (bare_label, checked_label):
        cpu, wall = durations[label]["cpu"], durations[label]["wall"]
        unit = f"   = {median(cpu) / per * 1e6:.3f} µs per probe" if per else ""
        print(f"     {label:<10} CPU {spread(cpu)};  wall {spread(wall)}{unit}")
    for clock in ("cpu", "wall"):
        bare, checked = durations[bare_label][clock], durations[checked_label][clock]
        paired = median([after / before for before, after in zip(bare, checked)])
        print(
            f"     {clock:>4}: ratio of medians {median(checked) / median(bare):.4f}, median of per-round ratios {paired:.4f}"
        )
    bare, checked = durations[bare_label]["cpu"], durations[checked_label]["cpu"]
    return median(bare), median(checked), median([after / before for before, after in zip(bare, checked)])


def nll_overhead(repeats, library_nll):
    random = np.random.default_rng(13)
    logits = random.standard_normal(NLL_SHAPE)
    targets = random.integers(0, NLL_SHAPE[1], NLL_SHAPE[0])
    analytic = mean_nll_gradient(logits, targets)
    loss = indexed_mean_nll if library_nll else mean_nll
    calls = {"bare loop": 0, "gradcheck": 0}

    def counted(label):
        def objective(candidate):
            calls[label] += 1
            return loss(candidate, targets)

        return objective

    warmup = 0 if library_nll else 1  # a warm-up round of the library's NLL would cost two minutes
    outcome = {}
    check = gradcheck_run(logits, analytic, NLL_SAMPLES, counted("gradcheck"))

    def checked():
        outcome["passed"] = check().passed

    name = "gradcheck_cli.nll.indexed_mean_nll" if library_nll else "vectorized numpy mean NLL (_objectives.mean_nll)"
    print(f"1. harness overhead: {name} over {list(NLL_SHAPE)} float64 logits, {NLL_SAMPLES} sampled coordinates")
    print(f"   {repeats} interleaved repetitions, median (range):")
    contenders = {"bare loop": bare_loop(logits, NLL_SAMPLES, STEP, counted("bare loop")), "gradcheck": checked}
    if not library_nll:
        # A control: an equivalent bare loop shows how far two loops doing the same calls differ here.
        contenders["bare again"] = bare_loop(logits, NLL_SAMPLES, STEP, counted("bare again"), python_floats=True)
        calls["bare again"] = 0
    durations = interleaved(contenders, repeats, warmup=warmup)
    per_run = {label: count / (repeats + warmup) for label, count in calls.items()}
    bare, _, ratio = report(durations)
    if not library_nll:
        first, again = durations["bare loop"]["cpu"], durations["bare again"]["cpu"]
        control = median([second / one for one, second in zip(first, again)])
        print(
            f"     control: an equivalent bare loop (Python-float probes) / bare loop: {control:.4f} "
            f"(CPU, median of per-round ratios)"
        )
    print(
        f"   objective calls per run: {per_run['gradcheck']:g} gradcheck, {per_run['bare loop']:g} bare loop; "
        f"check passed: {outcome['passed']}"
    )
    print(
        f"   ratio gradcheck / bare loop (CPU time, median of per-round ratios): {ratio:.4f}   {verdict(ratio, RATIO_GOAL)}"
    )
    return bare, per_run["gradcheck"]


def probe_overhead(label, objective, analytic_at_origin, repeats, samples):
    parameters = np.linspace(-1.0, 1.0, 256 * 256).reshape(256, 256)
    analytic = np.zeros_like(parameters)
    analytic[0, 0] = analytic_at_origin
    probes = 3 * min(samples, parameters.size)
    check = gradcheck_run(parameters, analytic, samples, objective)
    passed = check().passed
    durations = interleaved(
        {"bare loop": bare_loop(parameters, samples, STEP, objective), "gradcheck": check}, repeats, warmup=2
    )
    print(f"   objective {label} (check passed: {passed}):")
    bare, checked, _ = report(durations, per=probes)
    per_probe_us = (checked - bare) / probes * 1e6
    print(
        f"   overhead per probe (CPU time, medians): {per_probe_us:.3f} µs   {verdict(per_probe_us, PROBE_GOAL_US, unit=' µs')}"
    )
    return per_probe_us


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="interleaved repetitions of the NLL check")
    parser.add_argument("--probe-repeats", type=int, default=31, help="interleaved repetitions of the trivial check")
    parser.add_argument("--probe-samples", type=int, default=1024, help="coordinates in the trivial check")
    parser.add_argument(
        "--library-nll",
        action="store_true",
        help="use gradcheck_cli.nll.indexed_mean_nll (libm arithmetic, ~0.2 s a call: ~40 s a check; use --repeats 1)",
    )
    parser.add_argument("--natural-malloc", action="store_true", help="leave glibc's malloc trimming as it is")
    arguments = parser.parse_args()
    with_steady_malloc(arguments.natural_malloc)

    header("harness overhead: sampled_tensor_gradient_check vs a bare probing loop")
    print(malloc_line())
    nll_bare, nll_calls = nll_overhead(arguments.repeats, arguments.library_nll)

    samples = arguments.probe_samples
    print(
        f"2. per-probe overhead: {samples} coordinates of a [256, 256] float64 array, {3 * samples} probes per check,"
    )
    print(f"   {arguments.probe_repeats} interleaved repetitions, median (range):")
    per_probe_us = probe_overhead(
        "returning the Python float 0.0", lambda parameters: 0.0, 0.0, arguments.probe_repeats, samples
    )
    # Real objectives often return a numpy scalar, which takes the estimator's slower conversion path.
    probe_overhead(
        "returning parameters[0, 0] (a numpy float64)",
        lambda parameters: parameters[0, 0],
        1.0,
        arguments.probe_repeats,
        samples,
    )
    implied = 1 + nll_calls * per_probe_us * 1e-6 / nll_bare
    print(
        f"3. the NLL ratio implied by the per-probe overhead (free of the objective's noise): "
        f"1 + {nll_calls:g} × {per_probe_us:.2f} µs / {nll_bare:.3f} s = {implied:.5f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
