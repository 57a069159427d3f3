"""Harness overhead: the checks against a bare loop making the same number of objective calls.

Two checks are timed: `check_gradients` (what `gradcheck check`, the pytest
helper and the torch adapter run: f(θ) once plus checkpoints, two probes per
coordinate at h, confirmation probes at h/10 and 10h for a coordinate that
does not pass at h, a directional test per parameter) and the chapter's
`sampled_tensor_gradient_check` (three calls per coordinate). A check's
calls are counted, not assumed: `report.evaluations` for `check_gradients`,
checked against a counter around the objective. Each check's bare loop
makes exactly that many calls, each writing a probe θ±h into the array in
place, calling the objective and restoring the element, and nothing else.

1. The mean NLL over [64, 50257] float64 logits, 64 coordinates: check ÷ bare
   loop (CPU time, median of per-round ratios). Goal ≤ 1.02. The objective is
   the vectorized NLL of `_objectives.py` (about 6 ms a call); --library-nll
   uses `gradcheck_cli.chapter.nll.indexed_mean_nll` (about 0.2 s a call).
2. Per-probe cost with a trivial objective, [256, 256] float64, at 1024 and
   65,536 (every) coordinates, the cyclic GC on: (check − bare) ÷ calls in
   µs, and the check's time as a ratio to the bare loop's (goal ≤ 8).
   `check_gradients` also runs at a quarter of the coordinates, which splits
   its cost into a part per call and a part per check (selection, the
   directional test's whole-array work, the purity snapshots).

--baseline PATH times another checkout's checks in the same rounds (for
example the code before the verdict redesign: `git worktree add /tmp/old
18c60ed`), loaded under another name (see `_baseline.py`); the figure for
"no worse than before" is then the ratio of the two per-probe overheads.

Usage: python benchmarks/overhead.py [--repeats 9] [--probe-repeats 31] [--probe-samples 1024,65536] [--library-nll]
       [--baseline PATH] [--natural-malloc]
"""

import argparse
import sys

import numpy as np

import _baseline
import gradcheck_cli as chapter_api  # the package root exports the chapter's check, wherever it lives
from _common import header, interleaved, malloc_line, median, spread, verdict, with_steady_malloc
from _objectives import mean_nll, mean_nll_gradient
from gradcheck_cli import check as check_module
from gradcheck_cli.chapter.nll import indexed_mean_nll

NLL_SHAPE = (64, 50257)
NLL_SAMPLES = 64
PROBE_SHAPE = (256, 256)
STEP = 1.0e-5  # the chapter's check and the bare loops; check_gradients runs at its defaults
TOLERANCE = 1.0e-6
RATIO_GOAL = 1.02
PROBE_RATIO_GOAL = 8.0
NAME = "x"


class Counter:
    """Objective calls, by contender label."""

    def __init__(self):
        self.calls = {}

    def wrap(self, label: str, loss, mapping: bool):
        """``loss`` of the array (of ``mapping[NAME]`` when ``mapping``), counted under ``label``."""
        self.calls[label] = 0
        calls = self.calls

        if mapping:

            def objective(current):
                calls[label] += 1
                return loss(current[NAME])

        else:

            def objective(current):
                calls[label] += 1
                return loss(current)

        return objective


def gradients_check(module, parameters, gradient, samples, objective):
    """`check_gradients` of ``module`` at its defaults; returns (verdict, report.evaluations or None)."""

    def run():
        report = module.check_gradients(objective, {NAME: parameters}, {NAME: gradient}, samples=samples)
        return getattr(report, "verdict", "passed" if report.passed else "failed"), getattr(report, "evaluations", None)

    return run


def chapter_check(module, parameters, gradient, samples, objective):
    """The chapter's `sampled_tensor_gradient_check` of ``module``; returns (verdict, 3 · coordinates)."""

    def run():
        result = module.sampled_tensor_gradient_check(parameters, gradient, STEP, TOLERANCE, samples, objective)
        return ("passed" if result.passed else "failed"), 3 * len(result.checks)

    return run


def bare_loop(parameters, calls: int, objective, argument, python_floats=False):
    """``calls`` objective calls, each with one element moved by ±STEP in place and restored, and nothing else.

    The elements are the chapter's sampled coordinates, in turn. With
    ``python_floats`` the probes are Python floats instead of numpy scalars:
    an equivalent loop whose timing against the first shows how far two
    equivalent code paths differ on this machine.
    """
    coordinates = [sample.coordinate for sample in chapter_api.sample_tensor_coordinates(parameters.shape, calls)]
    plan = [(coordinates[k % len(coordinates)], STEP if k % 2 else -STEP) for k in range(calls)]

    def run():
        values = []
        for index, shift in plan:
            original = float(parameters[index]) if python_floats else parameters[index]
            parameters[index] = original + shift
            values.append(objective(argument))
            parameters[index] = original
        return values

    return run


def checks_of(baseline) -> list:
    """(label, module of check_gradients, module of the chapter's check) for this code and the baseline."""
    checks = [("", check_module, chapter_api)]
    if baseline is not None:
        checks.append(("baseline ", _baseline.submodule("check"), baseline))
    return checks


def build(parameters, gradient, samples_by_check, loss, counter, baseline, control=False):
    """Checks and, for each, a bare loop with the same number of calls (counted in a first run).

    Returns (contenders, pairs, outcomes): ``pairs`` maps a check's label to
    its bare loop's; ``outcomes`` the verdict and calls of each check.
    """
    checks, outcomes = {}, {}
    for prefix, gradients_module, chapter_module in checks_of(baseline):
        for samples in samples_by_check:
            suffix = "" if samples == samples_by_check[0] else f", {samples} coordinates"
            label = f"{prefix}check_gradients{suffix}"
            objective = counter.wrap(label, loss, mapping=True)
            checks[label] = (gradients_check(gradients_module, parameters, gradient, samples, objective), True)
        label = f"{prefix}chapter's check"
        objective = counter.wrap(label, loss, mapping=False)
        checks[label] = (chapter_check(chapter_module, parameters, gradient, samples_by_check[0], objective), False)
    contenders, pairs, bare_loops = {}, {}, {}
    for label, (run, mapping) in checks.items():
        before = counter.calls[label]
        verdict_text, reported = run()
        counted = counter.calls[label] - before
        outcomes[label] = (verdict_text, counted, reported)
        key = (counted, mapping)
        if key not in bare_loops:
            bare_label = f"bare loop, {counted} calls" + (" (mapping)" if mapping else "")
            objective = counter.wrap(bare_label, loss, mapping)
            argument = {NAME: parameters} if mapping else parameters
            bare_loops[key] = bare_label
            contenders[bare_label] = bare_loop(parameters, counted, objective, argument)
        contenders[label] = run
        pairs[label] = bare_loops[key]
    if control:
        first = pairs["check_gradients"]
        counted = outcomes["check_gradients"][1]
        objective = counter.wrap("control", loss, mapping=True)
        contenders["control"] = bare_loop(parameters, counted, objective, {NAME: parameters}, python_floats=True)
        pairs["control"] = first
    return contenders, pairs, outcomes


def paired_ratio(durations, label, bare_label, clock="cpu") -> float:
    """Median over rounds of check ÷ bare loop: each round runs both, so slow drifts of the machine cancel."""
    return median([c / b for b, c in zip(durations[bare_label][clock], durations[label][clock])])


def print_outcomes(outcomes: dict) -> None:
    for label, (verdict_text, counted, reported) in outcomes.items():
        note = f" (report.evaluations {reported})" if label.endswith("check_gradients") and reported is not None else ""
        print(f"   {label}: {verdict_text}, {counted} objective calls{note}")


def nll_overhead(repeats, library_nll, baseline):
    random = np.random.default_rng(13)
    logits = random.standard_normal(NLL_SHAPE)
    targets = random.integers(0, NLL_SHAPE[1], NLL_SHAPE[0])
    analytic = mean_nll_gradient(logits, targets)
    loss_function = indexed_mean_nll if library_nll else mean_nll

    def loss(values):
        return loss_function(values, targets)

    name = (
        "gradcheck_cli.chapter.nll.indexed_mean_nll"
        if library_nll
        else "vectorized numpy mean NLL (_objectives.mean_nll)"
    )
    print(f"1. harness overhead: {name} over {list(NLL_SHAPE)} float64 logits, {NLL_SAMPLES} coordinates")
    counter = Counter()
    contenders, pairs, outcomes = build(
        logits, analytic, (NLL_SAMPLES,), loss, counter, baseline, control=not library_nll
    )
    print_outcomes(outcomes)
    print(f"   {repeats} interleaved rounds (after the counting run), CPU time, median (range):")
    durations = interleaved(contenders, repeats, warmup=0)
    for label, times in durations.items():
        print(f"     {label:<38} {spread(times['cpu'])}")
    ratios = {}
    for label, bare_label in pairs.items():
        ratios[label] = paired_ratio(durations, label, bare_label)
        goal = f"   {verdict(ratios[label], RATIO_GOAL)}" if label != "control" else "   (two equivalent bare loops)"
        print(f"   {label} ÷ {bare_label}: {ratios[label]:.4f}{goal}")
    bare_seconds = median(durations[pairs["check_gradients"]]["cpu"])
    return bare_seconds / outcomes["check_gradients"][1], outcomes


def probe_overhead(label, loss, analytic_at_origin, repeats, samples, baseline):
    parameters = np.linspace(-1.0, 1.0, PROBE_SHAPE[0] * PROBE_SHAPE[1]).reshape(PROBE_SHAPE)
    gradient = np.zeros_like(parameters)
    gradient[0, 0] = analytic_at_origin
    counter = Counter()
    contenders, pairs, outcomes = build(parameters, gradient, (samples, max(1, samples // 4)), loss, counter, baseline)
    durations = interleaved(contenders, repeats, warmup=2)
    print(f"   objective {label}:")
    print_outcomes(outcomes)
    per_probe = {}
    for check_label, bare_label in pairs.items():
        calls = outcomes[check_label][1]
        check_seconds = median(durations[check_label]["cpu"])
        bare_per_call = median(durations[bare_label]["cpu"]) / calls
        per_probe[check_label] = check_seconds / calls - bare_per_call
        ratio = paired_ratio(durations, check_label, bare_label)
        goal = f"   {verdict(ratio, PROBE_RATIO_GOAL)}" if check_label == "check_gradients" else ""
        print(
            f"     {check_label:<44} {check_seconds / calls * 1e6:7.3f} µs per call, bare loop {bare_per_call * 1e6:.3f}: "
            f"overhead {per_probe[check_label] * 1e6:.3f} µs per probe, ratio to the bare loop {ratio:.1f}{goal}"
        )
    for prefix, _, _ in checks_of(baseline):
        full, quarter = f"{prefix}check_gradients", f"{prefix}check_gradients, {max(1, samples // 4)} coordinates"
        if quarter not in outcomes or outcomes[full][1] == outcomes[quarter][1]:
            continue
        calls_full, calls_quarter = outcomes[full][1], outcomes[quarter][1]
        extra = median(durations[full]["cpu"]) - median(durations[quarter]["cpu"])
        bare_per_call = median(durations[pairs[full]]["cpu"]) / calls_full
        marginal = extra / (calls_full - calls_quarter) - bare_per_call
        fixed = median(durations[full]["cpu"]) - calls_full * (bare_per_call + marginal)
        print(
            f"     {full}: {marginal * 1e6:.3f} µs per further probe, {fixed * 1e3:.2f} ms per check "
            f"(from {calls_quarter} and {calls_full} calls)"
        )
    if baseline is not None:
        for name in ("check_gradients", "chapter's check"):
            ratio = per_probe[name] / per_probe[f"baseline {name}"]
            print(f"     {name}: per-probe overhead ÷ the baseline's: {ratio:.2f}   {verdict(ratio, 1.0)}")
    return per_probe["check_gradients"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="interleaved rounds of the NLL checks")
    parser.add_argument("--probe-repeats", type=int, default=31, help="interleaved rounds of the trivial checks")
    parser.add_argument(
        "--probe-samples",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[1024, 65536],
        help="coordinates in the trivial check, comma-separated (65536 is every coordinate)",
    )
    parser.add_argument(
        "--library-nll",
        action="store_true",
        help="use gradcheck_cli.chapter.nll.indexed_mean_nll (libm arithmetic, ~0.2 s a call: minutes a round; use --repeats 1)",
    )
    parser.add_argument("--baseline", metavar="PATH", help="a checkout whose checks are timed in the same rounds")
    parser.add_argument("--natural-malloc", action="store_true", help="leave glibc's malloc trimming as it is")
    arguments = parser.parse_args()
    with_steady_malloc(arguments.natural_malloc)

    header("harness overhead: check_gradients and the chapter's check vs a bare probing loop")
    print(malloc_line())
    baseline = None
    if arguments.baseline:
        baseline, description = _baseline.load(arguments.baseline)
        print(f"baseline: {description}, timed in the same rounds as `baseline ...`")
    bare_per_call, outcomes = nll_overhead(arguments.repeats, arguments.library_nll, baseline)

    per_probe = None
    for samples in arguments.probe_samples:
        # A round of the larger selection takes about a second: fewer rounds.
        repeats = arguments.probe_repeats if samples <= 4096 else max(5, arguments.probe_repeats // 4)
        print(f"2. per-probe cost: {samples} coordinates of a {list(PROBE_SHAPE)} float64 array (GC on)")
        print(f"   {repeats} interleaved rounds, CPU time, medians; goal: check ÷ bare loop ≤ {PROBE_RATIO_GOAL:g}")
        overhead = probe_overhead("returning the Python float 0.0", lambda values: 0.0, 0.0, repeats, samples, baseline)
        per_probe = overhead if per_probe is None else per_probe
        # Real objectives often return a numpy scalar, which takes the estimator's slower conversion path.
        probe_overhead(
            "returning values[0, 0] (a numpy float64)", lambda values: values[0, 0], 1.0, repeats, samples, baseline
        )
    calls = outcomes["check_gradients"][1]
    implied = 1 + per_probe / bare_per_call
    print(
        f"3. the NLL ratio of check_gradients implied by its per-probe overhead alone (no per-check work): "
        f"1 + {per_probe * 1e6:.2f} µs / {bare_per_call * 1e3:.3f} ms = {implied:.5f} ({calls} calls)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
