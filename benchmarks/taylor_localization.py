"""Taylor-test localization: the extra objective calls to name one wrong parameter among P.

For P = 2, 4, 8, 16 parameters, each of the P problems with one wrong
parameter (twice its gradient) is run through ``check_taylor``; the script
prints the subset tests and objective calls the localization added (minimum,
mean and maximum over the wrong parameter's position) beside the whole
test's own calls, and checks that exactly the wrong parameter was named.
Counts, not times: nothing here is timed.

Usage: python benchmarks/taylor_localization.py [--sizes 2,4,8,16]
"""

import argparse
import math
import sys

import numpy as np

from _common import header
from gradcheck_cli.problem import GradientProblem
from gradcheck_cli.taylor.remainder import check_taylor


def coupled_problem(count: int, wrong: str) -> GradientProblem:
    """f = Σₖ (1 + k/10)·Σ cosh(pₖ) + ½(Σ every entry)², with ``wrong``'s gradient doubled."""
    parameters = {f"p{k}": np.linspace(-0.8, 0.9, 2 + k % 3) + 0.05 * k for k in range(count)}
    weights = {name: 1.0 + k / 10 for k, name in enumerate(parameters)}

    def objective(current):
        curved = sum(weights[name] * np.sum(np.cosh(values)) for name, values in current.items())
        return float(curved + 0.5 * sum(np.sum(values) for values in current.values()) ** 2)

    total = sum(np.sum(values) for values in parameters.values())
    gradients = {name: weights[name] * np.sinh(values) + total for name, values in parameters.items()}
    gradients[wrong] = 2.0 * gradients[wrong]
    return GradientProblem(objective, parameters, gradients)


def measure(count: int) -> dict:
    tests, calls, whole, named = [], [], set(), True
    for k in range(count):
        result = check_taylor(coupled_problem(count, f"p{k}"))
        named &= result.failing_parameters == (f"p{k}",)
        tests.append(len(result.localization))
        calls.append(result.localization_evaluations)
        whole.add(2 + sum(point.state in ("ok", "non-finite value") for point in result.points))
    return {"tests": tests, "calls": calls, "whole": sorted(whole), "named": named}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2,4,8,16", help="comma-separated parameter counts P")
    sizes = [int(size) for size in parser.parse_args().sizes.split(",")]
    header("Taylor-test localization: extra objective calls, one wrong parameter among P")
    print(
        f"{'P':>3} {'log2 P':>6} {'subset tests min/mean/max':>26} {'extra calls min/mean/max':>25} "
        f"{'whole test':>10} {'named right':>11}"
    )
    failed = False
    for count in sizes:
        figures = measure(count)
        tests, calls = figures["tests"], figures["calls"]
        print(
            f"{count:>3} {math.log2(count):>6.1f} "
            f"{f'{min(tests)} / {sum(tests) / count:.2f} / {max(tests)}':>26} "
            f"{f'{min(calls)} / {sum(calls) / count:.1f} / {max(calls)}':>25} "
            f"{'/'.join(map(str, figures['whole'])):>10} {'all' if figures['named'] else 'NOT ALL':>11}"
        )
        failed |= not figures["named"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
