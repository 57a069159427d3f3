"""Objective evaluations per checked coordinate: counted, not timed.

`check_problem` at its defaults on the examples' problems. A counter around
the objective checks `report.evaluations`; the figure is evaluations ÷
`report.checked`. Goal for examples/mlp.py's correct problem: ≤ 2.5 (the
chapter's three-point check makes 3). A coordinate that does not pass at h
costs four more (h/10 and 10h), a parameter's directional test two, or six
when it needs confirming, and f(θ) is evaluated four times in all.

Usage: python benchmarks/evaluations.py
"""

import importlib.util
import sys

from _common import REPOSITORY, header, verdict
from gradcheck_cli import GradientProblem, check_problem

GOAL = 2.5
#: (example file, problem function, whether the goal applies)
PROBLEMS = (
    ("mlp.py", "problem", True),
    ("mlp.py", "wrong_problem", False),
    ("mlp_float32.py", "problem", False),
    ("mlp_float32.py", "wrong_problem", False),
)


def load_example(filename: str):
    path = REPOSITORY / "examples" / filename
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # mlp_float32.py imports mlp
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def counted_check(problem: GradientProblem):
    """(report, calls counted around the objective) of check_problem at its defaults."""
    calls = [0]

    def objective(parameters):
        calls[0] += 1
        return problem.objective(parameters)

    report = check_problem(GradientProblem(objective, problem.parameters, problem.gradients))
    return report, calls[0]


def main() -> int:
    header("evaluations per checked coordinate: check_problem at its defaults on the examples")
    mismatched = False
    for filename, function, goal_applies in PROBLEMS:
        problem = getattr(load_example(filename), function)()
        report, counted = counted_check(problem)
        per_coordinate = report.evaluations / report.checked
        mismatched |= counted != report.evaluations
        directional = sum(len(check.directional.estimates) for check in report.parameters)
        print(
            f"examples/{filename}:{function}: verdict {report.verdict}, {report.checked} coordinates in "
            f"{len(report.parameters)} parameters ({report.inconclusive} inconclusive, {report.failed} failed), "
            f"{directional} directional estimates, f(θ) {report.purity.evaluations} times"
        )
        goal = f"   {verdict(per_coordinate, GOAL)}" if goal_applies else ""
        print(
            f"   {report.evaluations} evaluations (counted {counted}): {per_coordinate:.3f} per checked coordinate{goal}"
        )
    if mismatched:
        print("MISMATCH: report.evaluations differs from the calls counted around the objective")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
