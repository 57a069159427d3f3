"""A corpus of real, publicly reported gradient bugs, each rebuilt as a buggy and a fixed version.

The cases (benchmarks/_realbugs_numpy.py, _realbugs_torch.py, _realbugs_jax.py; docs/realbugs.md
lists them with their sources) are hand-written backward passes that someone got wrong and
reported in public: numpy course layers, torch autograd Functions (double backward included),
JAX custom_vjp / custom_jvp rules. Each runs in float64 and float32, fixed and buggy, through
gradcheck at its defaults and, beside it, through the course recipe (every coordinate,
h = 1e-5, max |a − n| / max(1e-8, |a| + |n|) ≤ 1e-7) and the framework's own checker
(torch.autograd.gradcheck / gradgradcheck in float64, jax.test_util.check_grads).

Printed per framework and dtype: fixed versions passed, bugs failed, parameters the bug reaches
reported passed, and the diagnosis of each bug: right (a kind the case names), misleading (a
specific kind the mistake is not: scale, sign, transpose, zero, localized),
unexplained, or wrong (no diagnosis where the bug reaches, or a scale with another factor); then
every case where gradcheck is wrong or weak, with the diagnosis it printed. ``--json-out`` writes
every run's record. Nothing is asserted about the rates; a case whose bug does not change the
gradient exactly where it says it does stops the script.

Usage: python benchmarks/realbugs.py [--frameworks numpy,torch,jax] [--cases NAME,...] [--dtypes float64,float32] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
import time
from dataclasses import dataclass

import numpy as np

from _common import header, machine_line
from _realbugs_case import SPECIFIC_KINDS, case_rng

FRAMEWORKS = ("numpy", "torch", "jax")
RECIPE_STEP, RECIPE_TOLERANCE = 1e-5, 1e-7
#: A gradient "changes" where the bug reaches when it moves by more than this, relative to its largest entry.
REACH_TOLERANCE = 1e-6


# gradcheck is called here and nowhere else, one function per framework, so a rename of the
# public API is one edit.


def gradcheck_numpy(problem, order):
    from gradcheck_cli import check_gradients

    objective, parameters, gradients = problem
    return check_gradients(objective, parameters, gradients)


def gradcheck_torch(problem, order):
    from gradcheck_cli.torch import check_function

    fn, inputs = problem
    return check_function(fn, inputs, order=order)


def gradcheck_jax(problem, order):
    from gradcheck_cli.jax import check_function

    fn, args = problem
    return check_function(fn, tuple(args), order=order)


GRADCHECK = {"numpy": gradcheck_numpy, "torch": gradcheck_torch, "jax": gradcheck_jax}


def _cotangent(rng, shape, dtype) -> np.ndarray:
    """A cotangent exact in ``dtype`` (so the framework's vjp and the float64 objective use the same u)."""
    return rng.normal(size=shape).astype(dtype).astype(np.float64)


def numpy_problem(problem, order, rng):
    """The case's own (objective, parameters, gradients)."""
    return problem


def torch_problem(problem, order, rng):
    """⟨u, fn⟩ (order 1) or ⟨v, ∇⟨u, fn⟩⟩ (order 2) over numpy views of the inputs that require grad."""
    import torch

    fn, inputs = problem
    checked = {f"inputs[{k}]": tensor for k, tensor in enumerate(inputs) if tensor.requires_grad}
    tensors = list(checked.values())
    outputs = fn(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    us = [torch.from_numpy(_cotangent(rng, out.shape, str(out.dtype).split(".")[1])) for out in outputs]

    def first(create_graph):
        returned = fn(*inputs)
        returned = returned if isinstance(returned, tuple) else (returned,)
        if not create_graph:
            return sum(float(torch.sum(out.detach().double() * u)) for out, u in zip(returned, us))
        cotangents = [u.to(out.dtype) for out, u in zip(returned, us)]
        return torch.autograd.grad(returned, tensors, cotangents, create_graph=True, allow_unused=True)

    def gradients_of(total):
        if not total.requires_grad:
            return [None] * len(tensors)
        return torch.autograd.grad(total, tensors, allow_unused=True)

    if order == 1:
        grads = gradients_of(sum(torch.sum(out * u.to(out.dtype)) for out, u in zip(outputs, us)))

        def objective(_arrays):
            with torch.no_grad():
                return first(create_graph=False)

    else:
        vs = [torch.from_numpy(_cotangent(rng, t.shape, str(t.dtype).split(".")[1])) for t in tensors]
        inner = first(create_graph=True)
        grads = gradients_of(sum(torch.sum(g * v.to(g.dtype)) for g, v in zip(inner, vs) if g is not None))

        def objective(_arrays):
            return sum(float(torch.sum(g.detach().double() * v)) for g, v in zip(first(True), vs) if g is not None)

    arrays = {name: tensor.detach().numpy() for name, tensor in checked.items()}
    gradients = {
        name: np.zeros(t.shape) if g is None else g.detach().double().numpy()
        for (name, t), g in zip(checked.items(), grads)
    }
    return objective, arrays, gradients


def jax_problem(problem, order, rng):
    """⟨u, fn⟩ (order 1) or ⟨v, ∇⟨u, fn⟩⟩ (order 2), jitted, over copies of the arguments."""
    import jax
    import jax.numpy as jnp

    fn, args = problem
    names = list(inspect.signature(fn).parameters)[: len(args)]
    outputs = fn(*args)
    u = jnp.asarray(_cotangent(rng, outputs.shape, outputs.dtype.name), dtype=outputs.dtype)

    def gradient(*xs):
        return jax.vjp(fn, *xs)[1](u)

    target, cotangent = (fn, u) if order == 1 else (gradient, None)
    if order == 2:
        cotangent = tuple(jnp.asarray(_cotangent(rng, a.shape, a.dtype.name), dtype=a.dtype) for a in args)
    grads = jax.vjp(target, *args)[1](cotangent)
    compiled = jax.jit(target)
    arrays = {name: np.array(arg, copy=True) for name, arg in zip(names, args)}

    def objective(_arrays):
        value = compiled(*(jnp.asarray(arrays[name]) for name in names))
        pairs = [(value, cotangent)] if order == 1 else zip(value, cotangent)
        return sum(float(jnp.sum(jnp.asarray(v, jnp.float64) * jnp.asarray(c, jnp.float64))) for v, c in pairs)

    return objective, arrays, {name: np.asarray(g, dtype=np.float64) for name, g in zip(names, grads)}


RECIPE_PROBLEM = {"numpy": numpy_problem, "torch": torch_problem, "jax": jax_problem}


def course_recipe(objective, parameters, gradients) -> dict:
    """Every coordinate, h = 1e-5, max |a − n| / max(1e-8, |a| + |n|) ≤ 1e-7: passed and the failing names."""
    failing = []
    for name, array in parameters.items():
        worst = 0.0
        for index in np.ndindex(array.shape):
            original = array[index]
            array[index] = original + RECIPE_STEP
            plus = objective(parameters)
            array[index] = original - RECIPE_STEP
            minus = objective(parameters)
            array[index] = original
            numerical = (plus - minus) / (2 * RECIPE_STEP)
            analytic = float(gradients[name][index])
            worst = max(worst, abs(analytic - numerical) / max(1e-8, abs(analytic) + abs(numerical)))
        if worst > RECIPE_TOLERANCE:
            failing.append(name)
    return {"passed": not failing, "failing": failing}


def peer_torch(problem, order, dtype) -> str:
    """torch.autograd.gradcheck (order 1) or gradgradcheck (order 2) at their defaults, float64 only."""
    import torch

    if dtype != "float64":
        return "n/a"
    fn, inputs = problem
    check = torch.autograd.gradcheck if order == 1 else torch.autograd.gradgradcheck
    try:
        return "passed" if check(fn, inputs, raise_exception=False) else "failed"
    except Exception as error:  # a checker that cannot run the case is reported as such
        return f"error: {type(error).__name__}: {error}"[:200]


def peer_jax(problem, order, dtype) -> str:
    """jax.test_util.check_grads in reverse mode at the case's order."""
    from jax.test_util import check_grads

    fn, args = problem
    try:
        check_grads(fn, args, order=order, modes=["rev"])
    except AssertionError:
        return "failed"
    except Exception as error:
        return f"error: {type(error).__name__}: {error}"[:200]
    return "passed"


PEER = {"numpy": None, "torch": peer_torch, "jax": peer_jax}
PEER_NAME = {"numpy": None, "torch": "torch gradcheck/gradgradcheck (float64)", "jax": "jax check_grads"}


def load_cases(framework):
    """The framework's cases, or None when the framework is not installed."""
    try:
        return importlib.import_module(f"_realbugs_{framework}").CASES
    except ModuleNotFoundError as error:
        if error.name in ("torch", "jax", "jaxlib"):
            return None
        raise


def verify_reach(case) -> None:
    """The bug changes the float64 gradient of exactly the parameters it says it reaches."""
    gradients = {}
    for buggy in (False, True):
        rng = case_rng(case.name, "float64")
        problem = case.build("float64", rng, buggy)
        gradients[buggy] = RECIPE_PROBLEM[case.framework](problem, case.order, rng)[2]
    reached = set()
    for name, right in gradients[False].items():
        change = np.max(np.abs(gradients[True][name] - right), initial=0.0)
        if change > REACH_TOLERANCE * max(1e-12, np.max(np.abs(right), initial=0.0)):
            reached.add(name)
    if reached != set(case.reaches):
        raise SystemExit(f"case {case.name}: the bug changes {sorted(reached)}, the case says {sorted(case.reaches)}")


def diagnosis_record(diagnosis) -> dict | None:
    """A diagnosis's fields and the line gradcheck prints for it (``kind ×factor: message``)."""
    if diagnosis is None:
        return None
    detail = f" ×{diagnosis.factor:g}" if diagnosis.kind == "scale" else ""
    detail += f" at {diagnosis.where}" if diagnosis.kind == "localized" else ""
    return {
        "kind": diagnosis.kind,
        "factor": diagnosis.factor,
        "where": diagnosis.where,
        "text": f"{diagnosis.kind}{detail}: {diagnosis.message}",
    }


def reasons(report, limit=3) -> list:
    """Why the check did not pass: the first coordinates that did not, and directional tests that did not."""
    found = [
        f"{name} {list(record.coordinate)}: {record.verdict}: {record.reason}" for name, record in report.failures()
    ]
    found += [
        f"{check.name} directional: {check.directional.verdict}: {check.directional.reason}"
        for check in report.parameters
        if not check.directional.passed
    ]
    return found[:limit]


def coordinate_counts(check) -> dict:
    """How many coordinates of one parameter were checked, of how many, with which verdicts."""
    counts = {verdict: check.checks.verdict_count(verdict) for verdict in sorted(check.checks.verdicts())}
    size = int(np.prod(check.shape, dtype=np.int64))
    return {"checked": len(check.checks), "size": size, **counts, "directional": check.directional.verdict}


def reached_labels(case) -> tuple:
    """The report's names of the checks a case's bug reaches: at order n > 1 each input's check of
    the n-th derivative, labelled by its path (``inputs[0] (rev∘rev)``); at order 1 the names."""
    if case.order == 1:
        return tuple(case.reaches)
    return tuple(f"{name} ({'∘'.join(['rev'] * case.order)})" for name in case.reaches)


def classify(case, report) -> str:
    """right / misleading / unexplained / wrong, for a bug's report (module docstring)."""
    diagnoses = [check.diagnosis for check in report.parameters if check.diagnosis is not None]
    diagnoses += [report.diagnosis] if report.diagnosis is not None else []
    if any(d.kind in SPECIFIC_KINDS and d.kind not in case.kinds for d in diagnoses):
        return "misleading"
    reached = [report.parameter(name).diagnosis for name in reached_labels(case)]
    if case.kinds and all(d is not None and d.kind in case.kinds for d in reached):
        factors_right = case.factor is None or all(
            d.kind not in ("scale", "sign") or d.factor == case.factor for d in reached
        )
        return "right" if factors_right else "wrong"
    if any(d is not None and d.kind == "unexplained" for d in reached):
        return "unexplained"
    return "wrong"


@dataclass(frozen=True)
class Run:
    """One case in one dtype, fixed or buggy."""

    case: object
    dtype: str
    buggy: bool

    def problem(self):
        rng = case_rng(self.case.name, self.dtype)
        return self.case.build(self.dtype, rng, self.buggy), rng


def run(item: Run) -> dict:
    case, framework = item.case, item.case.framework
    problem, _ = item.problem()
    started = time.perf_counter()
    report = GRADCHECK[framework](problem, case.order)
    seconds = time.perf_counter() - started
    problem, rng = item.problem()
    recipe = course_recipe(*RECIPE_PROBLEM[framework](problem, case.order, rng))
    peer = PEER[framework](item.problem()[0], case.order, item.dtype) if PEER[framework] else "n/a"
    verdicts = {check.name: check.verdict for check in report.parameters}
    record = {
        "case": case.name,
        "framework": framework,
        "dtype": item.dtype,
        "version": "bug" if item.buggy else "fixed",
        "order": case.order,
        "source": case.source,
        "mistake": case.mistake,
        "reaches": list(case.reaches),
        "kinds": list(case.kinds),
        "verdict": report.verdict,
        "parameters": verdicts,
        "diagnoses": {check.name: diagnosis_record(check.diagnosis) for check in report.parameters},
        "report_diagnosis": diagnosis_record(report.diagnosis),
        "coordinates": {check.name: coordinate_counts(check) for check in report.parameters},
        "reasons": reasons(report) if not report.passed else [],
        "evaluations": report.evaluations,
        "seconds": seconds,
        "recipe": recipe,
        "peer": peer,
    }
    if item.buggy:
        reached = reached_labels(case)
        record["reached_parameters_passed"] = [name for name in reached if verdicts[name] == "passed"]
        record["unreached_parameters_failed"] = [
            name for name, verdict in verdicts.items() if name not in reached and verdict == "failed"
        ]
        record["diagnosis"] = classify(case, report)
    return record


def _rate(part, whole) -> str:
    return f"{part}/{whole}"


def summary_rows(records, dtypes) -> list:
    """The framework's table: one row per dtype."""
    lines = [
        "| dtype | fixed passed | bugs failed | reached parameters passed | diagnosis right / wrong / misleading / unexplained "
        "| recipe: fixed passed, bugs failed | peer: fixed passed, bugs failed |",
        "|---|---|---|---|---|---|---|",
    ]
    for dtype in dtypes:
        fixed = [r for r in records if r["dtype"] == dtype and r["version"] == "fixed"]
        bugs = [r for r in records if r["dtype"] == dtype and r["version"] == "bug"]
        reached = sum(len(r["reaches"]) for r in bugs)
        wrongly_passed = sum(len(r["reached_parameters_passed"]) for r in bugs)
        classes = [
            sum(r["diagnosis"] == label for r in bugs) for label in ("right", "wrong", "misleading", "unexplained")
        ]
        ran = [r for r in fixed + bugs if r["peer"] != "n/a"]
        peer = "n/a"
        if ran:
            peer_fixed = sum(r["peer"] == "passed" for r in fixed)
            peer = f"{_rate(peer_fixed, len(fixed))}, {_rate(sum(r['peer'] == 'failed' for r in bugs), len(bugs))}"
        lines.append(
            f"| {dtype} | {_rate(sum(r['verdict'] == 'passed' for r in fixed), len(fixed))} "
            f"| {_rate(sum(r['verdict'] == 'failed' for r in bugs), len(bugs))} | {_rate(wrongly_passed, reached)} "
            f"| {' / '.join(map(str, classes))} "
            f"| {_rate(sum(r['recipe']['passed'] for r in fixed), len(fixed))}, "
            f"{_rate(sum(not r['recipe']['passed'] for r in bugs), len(bugs))} | {peer} |"
        )
    return lines


def weak_lines(records) -> list:
    """Every run where gradcheck is wrong or weak, with what it printed."""
    lines = []
    for r in records:
        where = f"  [{r['dtype']}] {r['case']} ({r['version']}):"
        if r["version"] == "fixed" and r["verdict"] != "passed":
            lines.append(f"{where} {r['verdict']}; {' | '.join(r['reasons'])}")
            continue
        if r["version"] == "fixed":
            continue
        if r["verdict"] != "failed":
            lines.append(f"{where} bug not failed: {r['verdict']}")
        for name in r["reached_parameters_passed"]:
            lines.append(f"{where} {name} reported passed, its gradient is wrong")
        for name in r["unreached_parameters_failed"]:
            lines.append(f"{where} {name} reported failed, the bug does not reach it")
        if r["diagnosis"] != "right":
            named = {}  # the same text for several parameters is printed once, with their names
            for name, diagnosis in r["diagnoses"].items():
                if diagnosis is not None:
                    named.setdefault(diagnosis["text"], []).append(name)
            for text, names in named.items():
                lines.append(f"{where} {r['diagnosis']}: {', '.join(names)} diagnosis: {text}")
            if r["report_diagnosis"] is not None:
                lines.append(f"{where} {r['diagnosis']}: check diagnosis: {r['report_diagnosis']['text']}")
            if not any(r["diagnoses"].values()):
                lines.append(f"{where} {r['diagnosis']}: no diagnosis ({r['verdict']})")
    return lines


def versions(frameworks) -> dict:
    found = {}
    for name in frameworks:
        if name != "numpy" and importlib.util.find_spec(name) is not None:
            found[name] = importlib.import_module(name).__version__
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--cases", help="comma-separated case names (default: every case)")
    parser.add_argument("--dtypes", default="float64,float32")
    parser.add_argument("--json-out")
    arguments = parser.parse_args(argv)
    frameworks, dtypes = arguments.frameworks.split(","), arguments.dtypes.split(",")
    wanted = set(arguments.cases.split(",")) if arguments.cases else None
    header(
        "real, publicly reported gradient bugs: gradcheck, the course recipe and the frameworks' checkers",
        **versions(frameworks),
    )
    records = []
    for framework in frameworks:
        cases = load_cases(framework)
        if cases is None:
            print(f"--- {framework}: skipped ({framework} is not installed)")
            continue
        cases = [case for case in cases if wanted is None or case.name in wanted]
        if not cases:
            continue
        for case in cases:
            verify_reach(case)
        found = [
            run(Run(case, dtype, buggy))
            for case in cases
            for dtype in dtypes
            if dtype in case.dtypes
            for buggy in (False, True)
        ]
        records += found
        peer = PEER_NAME[framework]
        print(f"--- {framework}: {len(cases)} cases × {', '.join(dtypes)}; peer: {peer or 'none (the recipe only)'}")
        print("\n".join(summary_rows(found, dtypes)))
        print("where gradcheck is wrong or weak:")
        print("\n".join(weak_lines(found)) or "  (nowhere)")
    if arguments.json_out:
        with open(arguments.json_out, "w", encoding="utf-8") as handle:
            json.dump(
                {"machine": machine_line(**versions(frameworks)), "runs": records}, handle, indent=1, allow_nan=False
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
