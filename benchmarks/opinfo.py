"""Differential benchmark on PyTorch's OpInfo corpus: how far can the verdict be trusted?

Every op of ``torch.testing._internal.common_methods_invocations.op_db``
with autograd (random, sparse and factory ops left out) gives up to
``--max-samples-per-op`` of its own sample inputs per dtype. For each, a
scalar objective f(θ) = Σ ⟨u, op(θ)⟩ with a fixed cotangent u is checked by
``gradcheck_cli.check_gradients`` at its defaults, once with autograd's
gradient and once with each mutation of it (×2, sign, +1e-3·max(1, |g|)
everywhere, and ×2 or +1e-3·max(1, |g|) on the single largest-|g| element of
the largest input). ``torch.autograd.gradcheck`` judges the same cases in
float64, and decides which points are smooth. The rules are in docs/opinfo.md.

Prints, per dtype, the rates of each verdict and the objective evaluations
per case; ``--json-out`` writes every case. Nothing is asserted.

Usage: python benchmarks/opinfo.py [--ops sin,mul] [--dtypes float64,float32] [--max-samples-per-op 3]
       [--max-elements 256] [--limit N] [--seed 0] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings

import numpy as np

from _common import header

try:
    import torch
except ImportError:
    torch = None

import gradcheck_cli

MUTATIONS = ("double", "sign", "shift", "one-double", "one-shift")
MUTATION_ORDER = {mutation: position for position, mutation in enumerate(("none", *MUTATIONS))}
SHIFT = 1e-3
#: Ops whose forward at the center takes longer than this are left out (the run must stay ≲ 10 minutes).
SLOW_FORWARD_SECONDS = 0.05
#: A center value varying by more than this relative amount over 3 calls is a random forward, left out.
RANDOM_SPREAD = 1e-6
VERDICTS = ("passed", "failed", "inconclusive", "error")


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated op names (name or name.variant); default: all")
    parser.add_argument("--dtypes", default="float64,float32", help="comma-separated: float64, float32")
    parser.add_argument("--max-samples-per-op", type=int, default=3)
    parser.add_argument("--max-elements", type=int, default=512, help="total differentiable input elements")
    parser.add_argument("--limit", type=int, help="at most this many ops per dtype")
    parser.add_argument("--seed", type=int, default=0, help="seeds the sample inputs and the cotangents")
    parser.add_argument("--json-out", help="write every case to this file")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="processes (default: cores)")
    arguments = parser.parse_args(argv)
    arguments.dtypes = [name.strip() for name in arguments.dtypes.split(",") if name.strip()]
    for name in arguments.dtypes:
        if name not in ("float64", "float32"):
            parser.error(f"--dtypes: unknown dtype {name!r} (float64 or float32)")
    arguments.ops = None if arguments.ops is None else {name.strip() for name in arguments.ops.split(",")}
    return arguments


def selected_ops(arguments, dtype: str):
    """The in-scope ops for ``dtype`` and a count of the reasons the others are out."""
    from torch.testing._internal.common_methods_invocations import op_db

    from _opinfo_cases import DTYPES, full_name, op_skip_reason

    ops, skipped = [], {}
    for op in op_db:
        if arguments.ops is not None and op.name not in arguments.ops and full_name(op) not in arguments.ops:
            continue
        reason = op_skip_reason(op, DTYPES[dtype])
        if reason is None:
            ops.append(op)
        else:
            skipped[reason] = skipped.get(reason, 0) + 1
    if arguments.limit is not None:
        ops = ops[: arguments.limit]
    return ops, skipped


def bits(case) -> list:
    return [tensor.detach().numpy().tobytes() for tensor in case.inputs]


def counted(case):
    """The case's objective with a call counter: (objective, counter list)."""
    calls = [0]

    def objective(parameters):
        calls[0] += 1
        return case.objective(parameters)

    return objective, calls


def check_once(case, gradients: dict) -> dict:
    """check_gradients at its defaults on the case's parameters with ``gradients``: the outcome."""
    objective, calls = counted(case)
    problem = gradcheck_cli.GradientProblem(objective, case.parameters, gradients)
    before = bits(case)
    outcome = {"verdict": None, "evaluations": 0, "message": None, "worst_scaled_error": None}
    try:
        report = gradcheck_cli.check_gradients(problem.objective, problem.parameters, problem.gradients)
    except gradcheck_cli.GradCheckError as error:
        outcome.update(verdict="error", message=str(error))
    except Exception as error:  # the op itself raised at a probe
        outcome.update(verdict="error", message=f"{type(error).__name__} (raised by the op): {error}")
    else:
        outcome.update(report_outcome(report))
    outcome["evaluations"] = calls[0]
    outcome["restored"] = bits(case) == before
    return outcome


def report_outcome(report) -> dict:
    """What the report says: verdict, worst scaled error, checked coordinates and the failures."""
    verdict = getattr(report, "verdict", None) or ("passed" if report.passed else "failed")
    records = [(check.name, record) for check in report.parameters for record in check.checks]
    scaled = [getattr(getattr(record, "comparison", None), "scaled_error", math.nan) for _, record in records]
    finite = [value for value in scaled if value is not None and math.isfinite(value)]
    failures = [failure_details(name, record) for name, record in report.failures()]
    purity = getattr(report, "purity", None)
    impurities = [] if purity is None or purity.pure else [purity.message]
    checked = {}
    for name, record in records:
        checked.setdefault(name, []).append(int(record.flat_index))
    return {
        "verdict": verdict,
        "worst_scaled_error": max(finite) if finite else None,
        "checked_coordinates": sum(len(flat) for flat in checked.values()),
        "checked_flat_indices": checked,
        "failures": failures,
        "impurities": impurities,
        "directional": {
            check.name: getattr(getattr(check, "directional", None), "verdict", None) for check in report.parameters
        },
        "diagnosis": {
            check.name: check.diagnosis.kind for check in report.parameters if getattr(check, "diagnosis", None)
        },
    }


def failure_details(name: str, record) -> dict:
    """A failing coordinate's numbers, read defensively (the record may grow fields)."""
    comparison = getattr(record, "comparison", None)
    difference = getattr(record, "difference", None)
    details = {"parameter": name, "coordinate": list(record.coordinate), "verdict": getattr(record, "verdict", None)}
    details["reason"] = getattr(record, "reason", None)
    estimates = getattr(record, "estimates", None)
    if estimates:
        decided = estimates[record.decided_at]
        details["decided"] = {
            "step": decided.step,
            "numerical": decided.numerical,
            "relative_error": decided.relative_error,
            "error_bar": decided.error_bar.total,
        }
    for key, source, attribute in (
        ("analytic", comparison, "analytic"),
        ("numerical", comparison, "numerical"),
        ("scaled_error", comparison, "scaled_error"),
        ("point", difference, "point"),
        ("requested_step", difference, "requested_step"),
        ("left_slope", difference, "left_slope"),
        ("right_slope", difference, "right_slope"),
        ("center_value", difference, "center_value"),
    ):
        details[key] = getattr(source, attribute, None)
    if details["center_value"] is not None:
        details["center_abs_f"] = abs(details["center_value"])
    return details


def with_rounding_bars(outcome: dict, dtype: str) -> dict:
    """Each failure with its rounding bar ε·M/h: what rounding f's outputs can put into the estimate.

    M = Σ|u|·|out| (``magnitude``) and ε is the case dtype's epsilon (the op's outputs are rounded
    in it); an op's internal rounding (a float32 sum over many terms) can be larger.
    """
    epsilon = float(np.finfo(np.float32 if dtype == "float32" else np.float64).eps)
    for failure in outcome.get("failures", []):
        step, analytic, numerical = failure["requested_step"], failure["analytic"], failure["numerical"]
        if step and analytic is not None and numerical is not None and math.isfinite(outcome["magnitude"]):
            failure["rounding_bar"] = epsilon * outcome["magnitude"] / step
            failure["within_rounding_bar"] = abs(analytic - numerical) <= failure["rounding_bar"]
    return outcome


def shift(value):
    """``value + 1e-3·max(1, |value|)``, elementwise."""
    return value + SHIFT * np.maximum(1.0, np.abs(value))


def mutated(case):
    """(mutation, gradients or None when it would leave g unchanged, target) for every mutation."""
    gradients = case.gradients
    largest = max(case.names, key=lambda name: gradients[name].size)
    flat = np.abs(gradients[largest]).reshape(-1)
    index = int(np.argmax(flat))
    nonzero = any(np.any(value != 0) for value in gradients.values())
    target = {"parameter": largest, "flat_index": index, "analytic": float(gradients[largest].reshape(-1)[index])}

    def one_element(change):
        copy = {name: value.copy() for name, value in gradients.items()}
        cell = copy[largest].reshape(-1)  # a view of the contiguous copy
        cell[index] = change(cell[index])
        return copy

    yield "double", ({name: 2.0 * value for name, value in gradients.items()} if nonzero else None), None
    yield "sign", ({name: -value for name, value in gradients.items()} if nonzero else None), None
    yield "shift", {name: shift(value) for name, value in gradients.items()}, None
    yield "one-double", (one_element(lambda value: 2.0 * value) if flat[index] != 0 else None), target
    yield "one-shift", one_element(shift), target


def forward_spread(case, repeats: int = 3) -> tuple:
    """(distinct center values among ``repeats`` calls, their relative spread)."""
    values = [case.objective(case.parameters) for _ in range(repeats)]
    spread = (max(values) - min(values)) / max(1e-300, max(abs(value) for value in values))
    return len({value.hex() for value in values}), spread


def magnitude(case) -> float:
    """Σ_k Σ |u_k|·|out_k| at the center: the size of what f's rounding is relative to."""
    from _opinfo_cases import flatten_outputs

    with torch.no_grad():
        flat = flatten_outputs(case.call())
    return float(
        sum((flat[k].double().abs() * u.abs()).sum().item() for k, u in zip(case.output_positions, case.cotangents))
    )


#: The probe steps of the smooth-point rule: torch.autograd.gradcheck's default, and 100× it.
SMALL_EPS, LARGE_EPS = 1e-6, 1e-4
#: One-sided slopes at SMALL_EPS may differ by this relative amount (curvature |f″| up to 1e4) plus rounding.
JUMP_TOLERANCE = 1e-2


def torch_evidence(case) -> dict:
    """torch's central differences at two steps, the smooth-point class, and what a verdict needs.

    ``smoothness`` is "smooth" (torch's criterion holds for autograd's
    float64 gradient at eps 1e-6 and at 1e-4, and no one-sided jump at
    1e-6), "ill-conditioned" (continuous, but only one of the two steps
    resolves the gradient) or "rejected" (neither step does, a jump, or the
    op raised at a probe). See docs/opinfo.md.
    """
    from _opinfo_cases import TorchSide, flat_gradient, torch_verdict

    side = TorchSide(case)
    try:
        reference = flat_gradient(case, side.reference_gradient())
        minus, center, plus = side.probe(SMALL_EPS)
        large_minus, _, large_plus = side.probe(LARGE_EPS)
    except Exception as error:  # noqa: BLE001 - any exception of the op at a probe
        note = f"{type(error).__name__} at a probe"
        return {"side": side, "numerical": None, "smoothness": "rejected", "smoothness_note": note}
    numerical = (plus - minus) / (2 * SMALL_EPS)
    at_small = torch_verdict(reference, numerical)
    at_large = torch_verdict(reference, (large_plus - large_minus) / (2 * LARGE_EPS))
    with np.errstate(invalid="ignore"):
        jump = np.abs((plus - center) - (center - minus)) / SMALL_EPS
        rounding = 4 * np.finfo(np.float64).eps * magnitude(case) / SMALL_EPS
        continuous = bool(np.all(jump <= JUMP_TOLERANCE * np.maximum(1.0, np.abs(numerical)) + rounding))
    passes = (at_small, at_large).count("passed")
    if continuous and passes == 2:
        smoothness = "smooth"
    elif continuous and passes == 1:
        smoothness = "ill-conditioned"
    else:
        smoothness = "rejected"
    note = f"torch's criterion at eps 1e-6: {at_small}, at 1e-4: {at_large}; one-sided jump: {not continuous}"
    return {"side": side, "numerical": numerical, "smoothness": smoothness, "smoothness_note": note}


def run_case(case, distinct: int, spread: float) -> list:
    """Every outcome of one case: the correct gradient, then each mutation (float64: torch's too).

    ``distinct`` and ``spread`` describe f at the center over repeated calls (:func:`forward_spread`).
    """
    from _opinfo_cases import flat_gradient, torch_verdict

    evidence = torch_evidence(case)
    common = {
        "op": case.op_name,
        "sample_index": case.sample_index,
        "dtype": case.dtype,
        "shapes": {name: list(tensor.shape) for name, tensor in zip(case.names, case.inputs)},
        "elements": case.elements,
        "smoothness": evidence["smoothness"],
        "smooth": evidence["smoothness"] == "smooth",
        "smoothness_note": evidence["smoothness_note"],
        "center_distinct_values": distinct,
        "center_relative_spread": spread,
        "magnitude": magnitude(case),
        "max_abs_gradient": max(float(np.max(np.abs(value), initial=0.0)) for value in case.gradients.values()),
    }
    torch_side = case.dtype == "float64"
    outcomes = [with_rounding_bars({**common, "mutation": "none", **check_once(case, case.gradients)}, case.dtype)]
    if torch_side:
        verdict, evaluations = evidence["side"].gradcheck(case.gradients)
        outcomes[0]["torch"] = {"verdict": verdict, "evaluations": evaluations}
        if evidence["numerical"] is not None:
            outcomes[0]["torch"]["replica"] = torch_verdict(flat_gradient(case, case.gradients), evidence["numerical"])
    for mutation, gradients, target in mutated(case):
        outcome = {**common, "mutation": mutation, "target": target}
        if gradients is None:
            outcome.update(verdict="skipped", message="the mutation leaves the gradient unchanged", evaluations=0)
        else:
            outcome.update(check_once(case, gradients))
            with_rounding_bars(outcome, case.dtype)
            if target is not None and "checked_flat_indices" in outcome:
                target_checked = target["flat_index"] in outcome["checked_flat_indices"].get(target["parameter"], [])
                outcome["target_checked"] = target_checked
            if torch_side:
                numerical = evidence["numerical"]
                verdict = "error" if numerical is None else torch_verdict(flat_gradient(case, gradients), numerical)
                outcome["torch"] = {"verdict": verdict, "evaluations": outcomes[0]["torch"]["evaluations"]}
        outcomes.append(outcome)
    return outcomes


def run_shard(arguments, dtype: str, shard: int, shards: int) -> tuple:
    """(outcomes, what was left out) for every ``shards``-th selected op in ``dtype``, from ``shard``."""
    from _opinfo_cases import cases_of

    warnings.simplefilter("ignore")
    ops, skipped_ops = selected_ops(arguments, dtype)
    outcomes, skipped_samples, slow = [], {}, []
    for number, op in enumerate(ops[shard::shards], 1):
        cases, skipped = cases_of(op, dtype, arguments.seed, arguments.max_samples_per_op, arguments.max_elements)
        for reason in skipped:
            skipped_samples[reason] = skipped_samples.get(reason, 0) + 1
        for case in cases:
            if case.center_seconds > SLOW_FORWARD_SECONDS:
                slow.append(case.op_name)
                continue
            distinct, spread = forward_spread(case)
            if spread > RANDOM_SPREAD:
                reason = f"random forward (relative spread of f > {RANDOM_SPREAD:g})"
                skipped_samples[reason] = skipped_samples.get(reason, 0) + 1
                continue
            outcomes.extend(run_case(case, distinct, spread))
        if number % 50 == 0:
            print(f"{dtype} shard {shard + 1}/{shards}: {number} ops, {len(outcomes)} outcomes", file=sys.stderr)
    left_out = {"ops_out_of_scope": skipped_ops if shard == 0 else {}, "samples_left_out": skipped_samples}
    left_out["slow_forward"] = sorted(set(slow))
    return outcomes, left_out


def _worker(task) -> tuple:
    arguments, dtype, shard, shards = task
    torch.set_num_threads(1)  # one process per core; small inputs run single-threaded anyway
    return run_shard(arguments, dtype, shard, shards)


def run_all(arguments) -> dict:
    """dtype -> (outcomes in op order, left out, seconds): ``--jobs`` processes share the ops."""
    tasks = [(arguments, dtype, shard, arguments.jobs) for dtype in arguments.dtypes for shard in range(arguments.jobs)]
    started = time.perf_counter()
    if arguments.jobs == 1:
        results = [run_shard(*task) for task in tasks]
    else:
        import concurrent.futures
        import multiprocessing

        context = multiprocessing.get_context("spawn")  # no fork of a process whose torch has started threads
        with concurrent.futures.ProcessPoolExecutor(arguments.jobs, mp_context=context) as pool:
            results = list(pool.map(_worker, tasks))
    seconds = time.perf_counter() - started
    merged = {}
    for (_, dtype, _, _), (outcomes, left_out) in zip(tasks, results):
        entry = merged.setdefault(dtype, ([], {"ops_out_of_scope": {}, "samples_left_out": {}, "slow_forward": []}))
        entry[0].extend(outcomes)
        for key in ("ops_out_of_scope", "samples_left_out"):
            for reason, count in left_out[key].items():
                entry[1][key][reason] = entry[1][key].get(reason, 0) + count
        entry[1]["slow_forward"] = sorted(set(entry[1]["slow_forward"]) | set(left_out["slow_forward"]))
    for dtype, (outcomes, _) in merged.items():
        order = {full: position for position, full in enumerate(op_order(arguments, dtype))}
        outcomes.sort(key=lambda o: (order[o["op"]], o["sample_index"], MUTATION_ORDER[o["mutation"]]))
    return {dtype: (*merged[dtype], seconds) for dtype in arguments.dtypes}


def op_order(arguments, dtype: str) -> list:
    from _opinfo_cases import full_name

    return [full_name(op) for op in selected_ops(arguments, dtype)[0]]


def rate(count: int, total: int) -> str:
    return f"{count}/{total} ({100.0 * count / total:.1f}%)" if total else "0/0"


def text_table(headers: list, rows: list) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [headers, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def verdict_counts(outcomes: list, key=lambda outcome: outcome["verdict"]) -> dict:
    counts = dict.fromkeys(VERDICTS, 0)
    for outcome in outcomes:
        verdict = key(outcome)
        counts[verdict] = counts.get(verdict, 0) + 1
    return counts


SMOOTHNESS = ("smooth", "ill-conditioned", "rejected")


def correct_rows(correct: list) -> list:
    """One row for all correct cases, then one per smooth-point class."""
    rows = []
    subsets = [("all", correct)] + [(label, [o for o in correct if o["smoothness"] == label]) for label in SMOOTHNESS]
    for label, subset in subsets:
        counts = verdict_counts(subset)
        evaluations = sum(o["evaluations"] for o in subset) / len(subset) if subset else math.nan
        rows.append([label, len(subset), *(rate(counts[v], len(subset)) for v in VERDICTS), f"{evaluations:.1f}"])
    return rows


def cause(outcome: dict) -> str:
    """Why a check did not pass: "error", "impure", "comparison", "kink", "rounding" or the verdict.

    "comparison": a coordinate failed by more than its rounding bar; "kink": otherwise a suspected
    kink; "rounding": every failing coordinate is within its rounding bar (:func:`with_rounding_bars`).
    """
    if outcome["verdict"] == "error":
        return "error"
    if outcome.get("impurities"):
        return "impure"
    failures = outcome.get("failures", [])
    if any(failure["verdict"] == "failed" and not failure.get("within_rounding_bar") for failure in failures):
        return "comparison"
    if any(failure["verdict"] == "suspected kink" for failure in failures):
        return "kink"
    if failures:
        return "rounding"
    return outcome["verdict"]


def mutation_rows(outcomes: list, torch_side: bool) -> list:
    rows = []
    for mutation in MUTATIONS:
        subset = [o for o in outcomes if o["mutation"] == mutation]
        run = [o for o in subset if o["verdict"] != "skipped"]
        if torch_side:
            counts = verdict_counts(run, key=lambda o: o["torch"]["verdict"])
            evaluations = sum(o["torch"]["evaluations"] for o in run) / len(run) if run else math.nan
        else:
            counts = verdict_counts(run)
            evaluations = sum(o["evaluations"] for o in run) / len(run) if run else math.nan
        skipped = len(subset) - len(run)
        rows.append([mutation, len(run), skipped, *(rate(counts[v], len(run)) for v in VERDICTS), f"{evaluations:.1f}"])
    return rows


def print_tables(dtype: str, outcomes: list, left_out: dict, seconds: float) -> None:
    correct = [o for o in outcomes if o["mutation"] == "none"]
    ops = {o["op"] for o in correct}
    classes = ", ".join(f"{sum(1 for o in correct if o['smoothness'] == label)} {label}" for label in SMOOTHNESS)
    print(f"\n--- {dtype}: {len(ops)} ops, {len(correct)} cases: {classes} (whole run {seconds:.0f} s) ---")
    print(
        f"left out: ops {left_out['ops_out_of_scope']}; samples {left_out['samples_left_out']}; "
        f"slow forward {left_out['slow_forward']}"
    )
    headers = ["cases", "n", *VERDICTS, "evaluations/case"]
    print("\ngradcheck_cli.check_gradients, correct gradients (failed = false fail):")
    print(text_table(headers, correct_rows(correct)))
    print("\ngradcheck_cli.check_gradients, mutated gradients (passed must be 0):")
    print(
        text_table(
            ["mutation", "n", "skipped (unchanged)", *VERDICTS, "evaluations/case"], mutation_rows(outcomes, False)
        )
    )
    if dtype == "float64":
        print("\ntorch.autograd.gradcheck (eps 1e-6, atol 1e-5, rtol 1e-3, full Jacobian) on the same cases:")
        torch_correct = [
            {**o, "verdict": o["torch"]["verdict"], "evaluations": o["torch"]["evaluations"]} for o in correct
        ]
        print(text_table(headers, correct_rows(torch_correct)))
        print(
            text_table(
                ["mutation", "n", "skipped (unchanged)", *VERDICTS, "evaluations/case"], mutation_rows(outcomes, True)
            )
        )
        replicas = [o["torch"] for o in correct if "replica" in o["torch"]]
        agree = sum(1 for t in replicas if t["replica"] == t["verdict"])
        print(f"torch's criterion replayed on its own probes agrees with the real run on {agree}/{len(replicas)} cases")
    print_digest(correct, outcomes)


def print_digest(correct: list, outcomes: list) -> None:
    """The ops behind the false fails and behind the mutated gradients that passed."""
    not_passed = {}
    for o in correct:
        if o["verdict"] != "passed":
            not_passed[f"{o['op']}[{o['sample_index']}]"] = f"{o['verdict']} ({o['smoothness']}, {cause(o)})"
    causes = {}
    for o in correct:
        if o["verdict"] != "passed":
            causes[(o["smoothness"], cause(o))] = causes.get((o["smoothness"], cause(o)), 0) + 1
    summary = ", ".join(f"{label} {kind}: {count}" for (label, kind), count in sorted(causes.items()))
    print(f"\ncorrect gradients not passed, by class and cause: {summary or 'none'}")
    print(f"correct gradients not passed ({len(not_passed)}): " + ", ".join(f"{k} {v}" for k, v in not_passed.items()))
    for mutation in MUTATIONS:
        passed = [
            f"{o['op']}[{o['sample_index']}]"
            for o in outcomes
            if o["mutation"] == mutation and o["verdict"] == "passed"
        ]
        print(f"{mutation} passed ({len(passed)}): " + ", ".join(passed))


def json_ready(value):
    """Non-finite floats as the strings "NaN", "inf", "-inf" (the project's JSON rule)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, np.generic):
        return json_ready(value.item())
    return value


def main(argv=None) -> int:
    arguments = parse_arguments(argv)
    if torch is None:
        print(
            "torch is not installed: nothing to benchmark (pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu; pip install expecttest)",
            file=sys.stderr,
        )
        return 2
    warnings.simplefilter("ignore")
    threads = torch.get_num_threads() if arguments.jobs == 1 else 1
    header("OpInfo differential benchmark", torch=torch.__version__, processes=arguments.jobs, threads=threads)
    results = {
        "arguments": {
            key: (sorted(value) if isinstance(value, set) else value) for key, value in vars(arguments).items()
        }
    }
    results["dtypes"] = {}
    for dtype, (outcomes, left_out, seconds) in run_all(arguments).items():
        print_tables(dtype, outcomes, left_out, seconds)
        results["dtypes"][dtype] = {"left_out": left_out, "cases": outcomes}
    results["seconds"] = seconds
    if arguments.json_out:
        with open(arguments.json_out, "w", encoding="utf-8") as output:
            json.dump(json_ready(results), output, allow_nan=False, indent=1)
        print(f"wrote every case to {arguments.json_out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
