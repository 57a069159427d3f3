"""Many parameter arrays: the shared-memory check and check_gradients at 128 and 1,024 parameters.

1. `reject_shared_memory`, every parameter selected, on P = 128 and 1,024
   float64 [4, 4] parameters laid out two ways: P separate arrays, and P
   disjoint slices of one flat buffer (each parameter its own stretch, as a
   model that packs its weights in one buffer does). The byte-extent sweep of
   gradcheck_cli.problem ("sweep (now)") beside the pairwise comparison it
   replaced ("pairwise (before)", copied below), in the same interleaved
   rounds: CPU time of one call, and the ratio 1,024 ÷ 128 (8 for a check
   linear in P, 64 for a quadratic one). Both must find no shared memory,
   and both name the same pair once the whole buffer is a parameter too.
2. `check_gradients(objective, parameters, gradients, samples=1)` on P = 128
   and 1,024 float64 [4, 4] parameters, disjoint slices of one buffer θ, with
   the linear objective f = Σₚ ⟨cₚ, θₚ⟩ = ⟨c, θ⟩ (c fixed) and its exact
   gradients cₚ: CPU time of one check, its evaluations (counted around the
   objective, beside report.evaluations), and the ratio 1,024 ÷ 128 (median
   of the per-round ratios). Goal ≤ 10: a check linear in P makes about 8.
   The objective reads θ whole in one `np.einsum`, numpy's own loop: BLAS's
   dot (`c @ θ`) goes multi-threaded from about 10^4 elements, and on a
   shared 2-core machine one such call of 16,384 elements took 6 ms instead
   of 5 µs. Its calls alone are timed too, a bare loop of as many calls, so
   the harness's share shows: they still grow as P² (P times the calls, each
   reading P arrays), which no objective that reads every parameter escapes;
   an objective reading the P arrays one by one in Python would make that
   share dominate.

Usage: python benchmarks/parameters.py [--repeats 7] [--check-repeats 5] [--natural-malloc]
"""

import argparse
import math
import sys
import time

import numpy as np

from _common import header, interleaved, malloc_line, median, seconds, spread, verdict, with_steady_malloc
from gradcheck_cli.check import check_gradients
from gradcheck_cli.engine import problem as problem_module
from gradcheck_cli.errors import SharedMemory

SIZES = (128, 1024)
SHAPE = (4, 4)
ELEMENTS = math.prod(SHAPE)
RATIO_GOAL = 10.0
#: Each timed call of the shared-memory check is repeated until it takes about this long.
CALL_BUDGET_S = 0.02


def pairwise_reject_shared_memory(parameters, names) -> None:
    """The pairwise comparison before the sweep (gradcheck_cli.problem at bc960c5), verbatim."""
    arrays = [(name, value) for name, value in parameters.items() if isinstance(value, np.ndarray)]
    order = list(parameters)
    for name in names:
        for other, array in arrays:
            if other != name and problem_module._overlap(parameters[name], array):
                first, second = sorted((name, other), key=order.index)
                raise SharedMemory(role="parameters", first=first, second=second)


IMPLEMENTATIONS = {
    "pairwise (before)": pairwise_reject_shared_memory,
    "sweep (now)": problem_module.reject_shared_memory,
}


def separate_arrays(count: int) -> dict:
    random = np.random.default_rng(count)
    return {f"layer{index}.weight": random.standard_normal(SHAPE) for index in range(count)}


def one_buffer(count: int, buffer=None) -> dict:
    """``count`` disjoint [4, 4] slices of one flat buffer (a fresh one unless given)."""
    if buffer is None:
        buffer = np.random.default_rng(count).standard_normal(count * ELEMENTS)
    return {
        f"layer{index}.weight": buffer[index * ELEMENTS : (index + 1) * ELEMENTS].reshape(SHAPE)
        for index in range(count)
    }


LAYOUTS = {"separate arrays": separate_arrays, "slices of one buffer": one_buffer}


def outcome(function, parameters, names):
    """The pair ``function`` reports, or None."""
    try:
        function(parameters, names)
    except SharedMemory as error:
        return error.first, error.second
    return None


def repeated(function, parameters, names):
    """A contender making ``loops`` calls, ``loops`` chosen so it takes about CALL_BUDGET_S; and ``loops``."""
    started = time.process_time()
    function(parameters, names)
    once = time.process_time() - started
    loops = max(1, math.ceil(CALL_BUDGET_S / max(once, 1e-9)))

    def run():
        for _ in range(loops):
            function(parameters, names)

    return run, loops


def paired_ratio(durations, numerator, denominator, clock="cpu") -> float:
    """Median over rounds of one contender's time ÷ another's: each round runs both, so drift cancels."""
    return median([a / b for a, b in zip(durations[numerator][clock], durations[denominator][clock])])


def shared_memory_timing(repeats: int) -> int:
    print(f"1. reject_shared_memory, every parameter selected, float64 {list(SHAPE)} parameters")
    contenders, loops, agreed = {}, {}, True
    for layout, make in LAYOUTS.items():
        for count in SIZES:
            parameters = make(count)
            names = list(parameters)
            outcomes = {label: outcome(function, parameters, names) for label, function in IMPLEMENTATIONS.items()}
            agreed &= set(outcomes.values()) == {None}
            for label, function in IMPLEMENTATIONS.items():
                key = (layout, count, label)
                contenders[key], loops[key] = repeated(function, parameters, names)
    # Correctness beside the timing: with the whole buffer as a parameter too, both name the same pair.
    buffer = np.zeros(SIZES[0] * ELEMENTS)
    parameters = {**one_buffer(SIZES[0], buffer), "buffer": buffer}
    pairs = {label: outcome(function, parameters, list(parameters)) for label, function in IMPLEMENTATIONS.items()}
    agreed &= len(set(pairs.values())) == 1 and None not in pairs.values()
    reported = next(iter(pairs.values())) if len(set(pairs.values())) == 1 else pairs
    print(f"   no shared memory found by either in any layout; with the whole buffer added, they report {reported}")
    print(f"   {repeats} interleaved rounds (each call repeated to about {seconds(CALL_BUDGET_S)}), CPU time per call:")
    durations = interleaved(contenders, repeats)
    per_call = {
        key: {clock: [value / loops[key] for value in values] for clock, values in times.items()}
        for key, times in durations.items()
    }
    print(f"     {'layout':<22} {'P':>5}  {'pairwise (before)':<42} {'sweep (now)':<42} before ÷ now")
    for layout in LAYOUTS:
        for count in SIZES:
            before, now = (layout, count, "pairwise (before)"), (layout, count, "sweep (now)")
            print(
                f"     {layout:<22} {count:>5}  {spread(per_call[before]['cpu']):<42} {spread(per_call[now]['cpu']):<42} "
                f"{paired_ratio(per_call, before, now):.1f}×"
            )
    small, large = SIZES
    print(f"   ratio {large} ÷ {small} (8 for linear, 64 for quadratic), median of the per-round ratios:")
    for layout in LAYOUTS:
        ratios = [paired_ratio(per_call, (layout, large, label), (layout, small, label)) for label in IMPLEMENTATIONS]
        print(f"     {layout:<22} pairwise (before) {ratios[0]:.1f}, sweep (now) {ratios[1]:.1f}")
    if not agreed:
        print("   FAILED: the two implementations disagree, or found shared memory where there is none")
        return 1
    return 0


def linear_problem(count: int):
    """(objective, parameters, gradients, calls): f = ⟨c, θ⟩ over ``count`` [4, 4] slices of θ; calls counted."""
    random = np.random.default_rng(count)
    theta = random.standard_normal(count * ELEMENTS)
    coefficients = random.standard_normal(count * ELEMENTS)
    parameters = one_buffer(count, theta)
    gradients = {name: array.copy() for name, array in one_buffer(count, coefficients).items()}
    calls = [0]

    def objective(current):
        # The arrays of ``current`` are views of θ, perturbed in place: one product over θ reads them all.
        calls[0] += 1
        return float(np.einsum("i,i->", coefficients, theta))

    return objective, parameters, gradients, calls


def check_timing(repeats: int) -> int:
    print(
        f"2. check_gradients(objective, parameters, gradients, samples=1) on P float64 {list(SHAPE)} "
        f"slices of one buffer θ, f = ⟨c, θ⟩"
    )
    contenders, outcomes = {}, {}
    for count in SIZES:
        objective, parameters, gradients, calls = linear_problem(count)

        def check(objective=objective, parameters=parameters, gradients=gradients):
            return check_gradients(objective, parameters, gradients, samples=1)

        report = check()
        counted = calls[0]
        outcomes[count] = (report.verdict, counted, report.evaluations, report.checked)

        def bare(objective=objective, parameters=parameters, counted=counted):
            for _ in range(counted):
                objective(parameters)

        contenders[f"check, P = {count}"] = check
        contenders[f"objective alone, P = {count}"] = bare
    failed = False
    for count, (verdict_text, counted, evaluations, checked) in outcomes.items():
        failed |= verdict_text != "passed" or counted != evaluations
        print(
            f"   P = {count}: {verdict_text}, {counted} objective calls (report.evaluations {evaluations}), "
            f"{checked} coordinates"
        )
    print(f"   {repeats} interleaved rounds (after the counting run), CPU time, median (range):")
    durations = interleaved(contenders, repeats, warmup=0)
    for label, times in durations.items():
        print(f"     {label:<28} {spread(times['cpu'])}")
    small, large = SIZES
    ratio = paired_ratio(durations, f"check, P = {large}", f"check, P = {small}")
    alone = paired_ratio(durations, f"objective alone, P = {large}", f"objective alone, P = {small}")
    harness = {
        count: [
            c - b
            for c, b in zip(durations[f"check, P = {count}"]["cpu"], durations[f"objective alone, P = {count}"]["cpu"])
        ]
        for count in SIZES
    }
    harness_ratio = median([a / b for a, b in zip(harness[large], harness[small])])
    print(
        f"   check ratio {large} ÷ {small} (median of the per-round ratios): {ratio:.2f}   {verdict(ratio, RATIO_GOAL)}"
    )
    print(
        f"   the objective's calls alone: {alone:.2f}; the check without them (check − objective alone): "
        f"{harness_ratio:.2f}, {seconds(median(harness[large]) / large)} per parameter at P = {large}"
    )
    if failed:
        print("   FAILED: a check did not pass, or its evaluations differ from the calls counted")
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="interleaved rounds of the shared-memory check")
    parser.add_argument("--check-repeats", type=int, default=5, help="interleaved rounds of check_gradients")
    parser.add_argument("--natural-malloc", action="store_true", help="leave glibc's malloc trimming as it is")
    arguments = parser.parse_args()
    with_steady_malloc(arguments.natural_malloc)

    header("many parameter arrays: reject_shared_memory and check_gradients at 128 and 1,024 parameters")
    print(malloc_line())
    return shared_memory_timing(arguments.repeats) | check_timing(arguments.check_repeats)


if __name__ == "__main__":
    sys.exit(main())
