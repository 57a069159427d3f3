"""The probe loop: the checks against a bare perturb/call/restore loop, with an objective that returns at once.

The objective is ``lambda parameters: 0.0`` itself, not wrapped in a counter (overhead.py counts
its calls, which makes every call dearer and the ratios milder): every microsecond the harness
spends per call shows. The array is overhead.py's [256, 256] float64, 1,024 coordinates.

1. ``check_gradients(samples=S)`` at its defaults ÷ a bare loop making its calls (``report.evaluations``,
   checked against a counted run beforehand), the objective taking the parameter mapping. Goal ≤ 8.
   It also runs at S/4 coordinates, which splits its time into a part per further call (the probe
   loop and the per-coordinate columns) and a part per check (the whole-array work of the
   selection, the directional test and the purity snapshots, which grows with the array, not S).
2. The chapter's ``sampled_tensor_gradient_check`` (S coordinates, three calls each, every record
   built) ÷ a bare loop of its 3·S calls, the objective taking the array. Goal ≤ 12.

Each bare loop is overhead.py's: the chapter's sampled coordinates in turn, θ ± h written into the
array in place, the objective called, θ written back, nothing else. Ratios are CPU time, the median
of per-round ratios over interleaved rounds. --baseline PATH times another checkout's checks in the
same rounds (``git worktree add /tmp/old COMMIT``, see _baseline.py). Nothing is asserted.

Usage: python benchmarks/probe_loop.py [--samples 1024] [--shape 256,256] [--repeats 31] [--baseline PATH]
"""

import argparse
import sys

import numpy as np

import _baseline
import gradcheck_cli as chapter_api  # the package root exports the chapter's check, wherever it lives
from _common import header, interleaved, median, verdict
from gradcheck_cli import check as check_module
from overhead import STEP, TOLERANCE, bare_loop

NAME = "x"
GOALS = {"check_gradients": 8.0, "chapter's check": 12.0}


def returns_at_once(parameters):
    return 0.0


def counted_calls(run_check) -> int:
    """The objective calls one run of ``run_check(objective)`` makes, counted around the objective."""
    calls = [0]

    def counted(parameters):
        calls[0] += 1
        return 0.0

    run_check(counted)
    return calls[0]


def contenders_of(label: str, modules: tuple, parameters, gradient, samples: int) -> list:
    """(label, run, calls, mapping) for each check of one checkout: check_gradients at S and S/4, the chapter's."""
    gradients_module, chapter_module = modules
    rows = []
    for count in (samples, max(1, samples // 4)):

        def run_gradients(objective=returns_at_once, count=count):
            report = gradients_module.check_gradients(objective, {NAME: parameters}, {NAME: gradient}, samples=count)
            return report.evaluations

        calls = counted_calls(run_gradients)
        if run_gradients() != calls:
            raise SystemExit(f"{label}check_gradients: report.evaluations differs from the {calls} counted calls")
        suffix = "" if count == samples else f", {count} coordinates"
        rows.append((f"{label}check_gradients{suffix}", run_gradients, calls, True))

    def run_chapter(objective=returns_at_once):
        return chapter_module.sampled_tensor_gradient_check(parameters, gradient, STEP, TOLERANCE, samples, objective)

    rows.append((f"{label}chapter's check", run_chapter, counted_calls(run_chapter), False))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1024, help="coordinates S")
    parser.add_argument("--shape", type=lambda text: tuple(int(part) for part in text.split(",")), default=(256, 256))
    parser.add_argument("--repeats", type=int, default=31, help="interleaved rounds")
    parser.add_argument("--baseline", metavar="PATH", help="a checkout whose checks are timed in the same rounds")
    arguments = parser.parse_args()

    header("the probe loop: the checks ÷ a bare perturb/call/restore loop, objective `lambda p: 0.0`")
    checkouts = [("", (check_module, chapter_api))]
    if arguments.baseline:
        baseline, description = _baseline.load(arguments.baseline)
        print(f"baseline: {description}, timed in the same rounds as `baseline ...`")
        checkouts.append(("baseline ", (_baseline.submodule("check"), baseline)))
    size = int(np.prod(arguments.shape))
    parameters = np.linspace(-1.0, 1.0, size).reshape(arguments.shape)
    gradient = np.zeros_like(parameters)  # the gradient of 0.0: every coordinate passes at its first step
    print(f"{arguments.samples} coordinates of a {list(arguments.shape)} float64 array; {arguments.repeats} rounds")

    contenders, pairs, calls_of = {}, {}, {}
    for label, modules in checkouts:
        for name, run, calls, mapping in contenders_of(label, modules, parameters, gradient, arguments.samples):
            bare_label = f"bare loop, {calls} calls" + (" (mapping)" if mapping else "")
            if bare_label not in contenders:
                argument = {NAME: parameters} if mapping else parameters
                contenders[bare_label] = bare_loop(parameters, calls, returns_at_once, argument)
            contenders[name], pairs[name], calls_of[name] = run, bare_label, calls
    durations = interleaved(contenders, arguments.repeats, warmup=2)

    for name, bare_label in pairs.items():
        cpu, bare = durations[name]["cpu"], durations[bare_label]["cpu"]
        ratios = [c / b for c, b in zip(cpu, bare)]
        goal = GOALS.get(name.removeprefix("baseline "))
        goal_text = f"   {verdict(median(ratios), goal)}" if goal and "coordinates" not in name else ""
        print(
            f"  {name:<44} {calls_of[name]:>5} calls, {median(cpu) / calls_of[name] * 1e6:6.3f} µs a call "
            f"(bare {median(bare) / calls_of[name] * 1e6:.3f}): ÷ bare loop {median(ratios):.2f} "
            f"(range {min(ratios):.2f}–{max(ratios):.2f}){goal_text}"
        )
    for label, _ in checkouts:
        full, quarter = (
            f"{label}check_gradients",
            f"{label}check_gradients, {max(1, arguments.samples // 4)} coordinates",
        )
        extra_calls = calls_of[full] - calls_of[quarter]
        if extra_calls <= 0:
            continue
        per_call = (median(durations[full]["cpu"]) - median(durations[quarter]["cpu"])) / extra_calls
        fixed = median(durations[full]["cpu"]) - per_call * calls_of[full]
        bare_call = median(durations[pairs[full]]["cpu"]) / calls_of[full]
        print(
            f"  {full}: {per_call * 1e6:.3f} µs per further call ({per_call / bare_call:.2f}× the bare loop's), "
            f"{fixed * 1e3:.2f} ms per check of this {size}-element array"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
