"""Parity with the peers (issue 33): PyTorch's and JAX's own checker tests, run in the peer and in gradcheck.

Every scenario of _torch_scenarios.py (``torch.autograd.gradcheck``/``gradgradcheck`` with the options
torch's test passes) and of _jax_scenarios.py (``jax.test_util.check_grads``, a right and a wrong rule
each) runs in the peer and in gradcheck, on the same function and fresh inputs. Per run this prints
what the peer did (passed, failed, refused with a typed error of its own, or raised the function's own
error), what gradcheck did (its verdict, "refused" with the first line of a GradCheckError, an unknown
option included, or "crashed" with any other exception) and whether they
agree: a peer's pass passed, its failure failed, its refusal refused, the function's own error raised
by both (a few scenarios accept more, where issue 33 says so). Then the counts, and the feature table
of issue 33: each feature × torch, JAX, scipy's ``check_grad`` and gradcheck, from these runs; scipy
and gradcheck's numpy ``check_gradients`` also run on small numpy cases (complex parameters with a
conjugated gradient, float16), where the table has a scipy column.

gradcheck is called through one function per framework, :func:`torch_check_function` and
:func:`jax_check_function`: the one API, ``check_function(fn, inputs, **options)`` with ``order``,
``modes`` and the scenario's other options. torch and jax are optional: a framework that is not
installed is skipped, saying so. Nothing is asserted.

Usage: python benchmarks/parity.py [--frameworks torch,jax,numpy] [--only NAME,...] [--limit N]
       [--json-out FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial

import numpy as np

import gradcheck_cli
from _common import header
from gradcheck_cli.errors import GradCheckError

FRAMEWORKS = ("torch", "jax", "numpy")
#: A report's verdicts from best to worst: the shim's combined report is the worst of its modes'.
VERDICTS = ("passed", "inconclusive", "failed")
#: The features of issue 33's table, first; the others follow in the order the scenarios meet them.
ISSUE_FEATURES = (
    "complex inputs (Wirtinger)",
    "complex outputs",
    "mixed complex and real outputs",
    "float16",
    "undefined output gradient",
    "nondeterministic backward",
    "batched gradients (vmap)",
    "third order",
    "sparse inputs (COO/CSR)",
)
INSTALL = {"torch": "pip install torch==2.13.0 (the CPU build, docs/torch.md)", "jax": "pip install jax"}


@dataclass(frozen=True)
class Outcome:
    """What one checker did: ``kind`` (a verdict, refused, raised or crashed) and the exception's first line."""

    kind: str
    line: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.line}" if self.line else self.kind


@dataclass(frozen=True)
class Run:
    """One scenario (one rule of it, for JAX) in the peer and in gradcheck."""

    framework: str
    scenario: str
    variant: str
    feature: str
    source: str
    options: dict
    peer_call: str
    recorded: str
    peer: Outcome
    gradcheck: Outcome
    agreeing: tuple
    seconds: float

    @property
    def category(self) -> str:
        """agree, or how gradcheck differs: refused, crashed or wrong (another verdict)."""
        if self.gradcheck.kind in self.agreeing:
            return "agree"
        return self.gradcheck.kind if self.gradcheck.kind in ("refused", "crashed") else "wrong"

    def to_dict(self) -> dict:
        return {**asdict(self), "category": self.category}


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


# The one call per framework: the one API, gradcheck_cli.torch/jax.check_function(fn, inputs, **options).


def torch_check_function(fn, inputs, **options):
    """``gradcheck_cli.torch.check_function(fn, inputs, **options)``."""
    from gradcheck_cli import torch as adapter

    return adapter.check_function(fn, inputs, **options)


def jax_check_function(fn, inputs, **options):
    """``gradcheck_cli.jax.check_function(fn, inputs, **options)``, in both modes unless told (as check_grads)."""
    from gradcheck_cli import jax as adapter

    return adapter.check_function(fn, inputs, **{"modes": ("fwd", "rev"), **options})


def gradcheck_outcome(call: Callable, peer_error: BaseException | None) -> Outcome:
    """gradcheck's outcome of ``call()``: its verdict, refused, raised (the peer's own exception) or crashed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = call()
    except GradCheckError as error:
        return Outcome("refused", first_line(error))
    except Exception as error:  # noqa: BLE001 (a benchmark records what happened)
        if isinstance(error, TypeError) and "unexpected keyword argument" in str(error):
            return Outcome("refused", first_line(error))
        if peer_error is not None and first_line(error) == first_line(peer_error):
            return Outcome("raised", first_line(error))
        return Outcome("crashed", first_line(error))
    return Outcome(report.verdict)


# The runs.


def run_torch(select: Callable) -> list:
    """Every selected torch scenario: torch's checker, then gradcheck on fresh inputs."""
    import torch

    from _torch_scenarios import SCENARIOS

    torch.set_num_threads(1)
    runs = []
    for scenario in select(SCENARIOS):
        peer, peer_error = torch_peer(scenario)
        started = time.process_time()
        ours = gradcheck_outcome(partial(torch_check_function, *scenario.make(), **scenario.options), peer_error)
        runs.append(
            Run(
                framework="torch",
                scenario=scenario.name,
                variant="",
                feature=scenario.feature,
                source=scenario.source,
                options=dict(scenario.options),
                peer_call=str(scenario.peer),
                recorded=scenario.expected.outcome,
                peer=peer,
                gradcheck=ours,
                agreeing=tuple(sorted(scenario.accepts | {peer.kind})),
                seconds=time.process_time() - started,
            )
        )
    return runs


def torch_peer(scenario) -> tuple:
    """(torch's outcome, its exception or None); an exception is classed by the scenario's record, else by type."""
    from torch.autograd.gradcheck import GradcheckError

    fn, inputs = scenario.make()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # float32 inputs, the undefined-gradient check's compatibility notice
            passed = scenario.peer(fn, inputs)
    except Exception as error:  # noqa: BLE001
        if scenario.expected.matches(error):
            kind = scenario.expected.outcome
        elif isinstance(error, GradcheckError):
            kind = "failed"
        else:  # torch refuses what it cannot check with a ValueError; anything else is the function's
            kind = "refused" if isinstance(error, ValueError) else "raised"
        return Outcome(kind, first_line(error)), error
    return Outcome("passed" if passed else "failed"), None


def run_jax(select: Callable) -> list:
    """Every selected JAX scenario, its right rule and its wrong rule: check_grads, then gradcheck."""
    from _jax_scenarios import SCENARIOS

    runs = []
    for scenario in select(SCENARIOS):
        for variant in ("right", "wrong"):
            peer, peer_error = jax_peer(scenario, variant)
            started = time.process_time()
            ours = gradcheck_outcome(
                partial(jax_check_function, *scenario.make(variant), **scenario.options), peer_error
            )
            runs.append(
                Run(
                    framework="jax",
                    scenario=scenario.name,
                    variant=variant,
                    feature=scenario.feature,
                    source=scenario.source,
                    options=scenario.options,
                    peer_call=f"check_grads(fn, inputs, order={scenario.order}, modes={scenario.modes})",
                    recorded=scenario.expected[variant],
                    peer=peer,
                    gradcheck=ours,
                    agreeing=(peer.kind, *scenario.accepts.get(variant, ())),
                    seconds=time.process_time() - started,
                )
            )
    return runs


def jax_peer(scenario, variant: str) -> tuple:
    fn, inputs = scenario.make(variant)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scenario.peer(fn, inputs)
    except AssertionError as error:
        return Outcome("failed", first_line(error)), None
    except Exception as error:  # noqa: BLE001
        return Outcome("raised", first_line(error)), error
    return Outcome("passed"), None


# Small numpy cases, where scipy.optimize.check_grad applies: it returns ‖g - approx_fprime‖, no verdict.


@dataclass(frozen=True)
class NumpyCase:
    """f(θ) at ``point`` (its dtype the case's) with a right gradient and a buggy one, by label."""

    name: str
    feature: str
    point: np.ndarray
    objective: Callable
    gradients: dict = field(default_factory=dict)


def numpy_cases() -> list:
    generator = np.random.default_rng(0)
    c = generator.normal(size=4) + 1j * generator.normal(size=4)
    z = generator.normal(size=4) + 1j * generator.normal(size=4)

    def modulus_plus_linear(z):
        """Σ|z|² + Re Σ c·z: its gradient ∂f/∂Re z + i ∂f/∂Im z is 2z + c̄; the classic bug conjugates it."""
        return float(np.sum(np.abs(z) ** 2) + np.real(np.sum(c * z)))

    complex_gradients = {"right": lambda z: 2 * z + np.conj(c), "conjugated": lambda z: 2 * np.conj(z) + c}
    x = generator.uniform(0.5, 1.5, 5).astype(np.float16)

    def half_sines(x):
        """Σ sin x in float16 arithmetic, as a float16 model computes it (scipy's probes are float64)."""
        return float(np.sum(np.sin(np.asarray(x, dtype=np.float16)), dtype=np.float16))

    sine_gradients = {"right": lambda x: np.cos(x), "×2": lambda x: 2 * np.cos(x)}
    return [
        NumpyCase(
            "Σ|z|² + Re Σ c·z, complex128", "complex inputs (Wirtinger)", z, modulus_plus_linear, complex_gradients
        ),
        NumpyCase(
            "Σ|z|² + Re Σ c·z, complex64",
            "complex inputs (Wirtinger)",
            z.astype(np.complex64),
            modulus_plus_linear,
            complex_gradients,
        ),
        NumpyCase("Σ sin x, float16", "float16", x, half_sines, sine_gradients),
    ]


def numpy_check(case: NumpyCase, gradient: Callable):
    """gradcheck_cli.check_gradients on the case, its parameter a copy of the point named theta."""
    objective = case.objective
    return gradcheck_cli.check_gradients(
        lambda p: objective(p["theta"]), {"theta": case.point.copy()}, {"theta": gradient(case.point)}
    )


def run_numpy() -> list:
    """scipy's check_grad (where scipy is installed; NaN where not) and gradcheck's check_gradients on each
    numpy case, right and buggy gradient."""
    try:
        from scipy.optimize import check_grad
    except ImportError:  # scipy comes with jax; the oldest-versions run has neither: no check_grad column

        def check_grad(*_):
            return None

    rows = []
    for case in numpy_cases():
        errors = {}
        for label, gradient in case.gradients.items():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                error = check_grad(case.objective, gradient, case.point.copy())
                errors[label] = None if error is None else float(error)
            ours = gradcheck_outcome(partial(numpy_check, case, gradient), None)
            rows.append(
                {
                    "case": case.name,
                    "feature": case.feature,
                    "gradient": label,
                    "check_grad": errors[label],
                    "check_grad_warnings": sorted({str(w.message) for w in caught}),
                    "gradcheck": asdict(ours),
                    "agree": ours.kind == ("passed" if label == "right" else "failed"),
                }
            )
        # check_grad separates when the right gradient's error is under 1% of ‖g‖ and the buggy one's 10× larger.
        scale = float(np.linalg.norm(case.gradients["right"](case.point)))
        right, buggy = (None if errors[label] is None else errors[label] / scale for label in case.gradients)
        for row in rows[-2:]:
            row["check_grad_separates"] = None if right is None else bool(right < 1e-2 and buggy > 10 * right)
    return rows


# What is printed.


def cell(text: str, width: int = 110) -> str:
    text = text.replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def print_runs(framework: str, runs: list) -> None:
    peer = {"torch": "torch", "jax": "check_grads"}[framework]
    print(f"\n### {framework}: {peer} and gradcheck, scenario by scenario\n")
    print(f"| scenario | rule | feature | {peer} | gradcheck | agree |")
    print("| --- | --- | --- | --- | --- | --- |")
    for run in runs:
        recorded = "" if run.peer.kind == run.recorded else f" (recorded: {run.recorded})"
        agree = "yes" if run.category == "agree" else f"no: {run.category}"
        peer_text, ours = cell(str(run.peer)) + recorded, cell(str(run.gradcheck))
        print(f"| {cell(run.scenario, 60)} | {run.variant or '—'} | {run.feature} | {peer_text} | {ours} | {agree} |")


def counts(runs: list) -> dict:
    return {
        category: sum(run.category == category for run in runs) for category in ("agree", "refused", "wrong", "crashed")
    }


def print_counts(framework: str, runs: list) -> None:
    unit = "scenarios" if framework == "torch" else f"runs ({len(runs) // 2} scenarios × right and wrong rule)"
    summary = ", ".join(f"{count} {category}" for category, count in counts(runs).items())
    changed = sum(run.peer.kind != run.recorded for run in runs)
    print(f"\n{framework}: {len(runs)} {unit}: {summary}; the peer did other than recorded in {changed}")


def _number(value) -> str:
    return "—" if value is None else f"{value:.3g}"


def print_numpy(rows: list) -> None:
    print("\n### numpy: scipy.optimize.check_grad and gradcheck_cli.check_gradients\n")
    print("| case | gradient | check_grad ‖g - approx‖ | check_grad separates | gradcheck | agree |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        note = f" ({'; '.join(row['check_grad_warnings'])})" if row["check_grad_warnings"] else ""
        ours = str(Outcome(**row["gradcheck"]))
        separates, agree = (
            {True: "yes", False: "no", None: "—"}[row[key]] for key in ("check_grad_separates", "agree")
        )
        print(
            f"| {cell(row['case'])} | {row['gradient']} | {_number(row['check_grad'])}{note} | {separates} | {cell(ours)} | {agree} |"
        )


def peer_cell(runs: list) -> str:
    """Whether the peer checks a feature's scenarios: yes, refuses, k/n checked, or — where it has none."""
    if not runs:
        return "—"
    checked = sum(run.peer.kind != "refused" for run in runs)
    return "yes" if checked == len(runs) else "refuses" if checked == 0 else f"{checked}/{len(runs)}"


def gradcheck_cell(runs: list, rows: list) -> str:
    """yes when every run of the feature agrees with its peer; else, per framework, agreeing/runs and why not."""
    parts = []
    for framework in FRAMEWORKS:
        if framework == "numpy":
            outcomes = [("agree" if row["agree"] else row["gradcheck"]["kind"]) for row in rows]
        else:
            outcomes = [run.category for run in runs if run.framework == framework]
        if not outcomes:
            continue
        others = ", ".join(f"{outcomes.count(kind)} {kind}" for kind in sorted(set(outcomes) - {"agree"}))
        parts.append(f"{framework} {outcomes.count('agree')}/{len(outcomes)}" + (f" ({others})" if others else ""))
    agreed = all(run.category == "agree" for run in runs) and all(row["agree"] for row in rows)
    return "yes" if agreed else "no: " + "; ".join(parts)


def print_features(runs: list, rows: list) -> list:
    """The feature table of issue 33, from the runs; returns its rows."""
    seen = [*ISSUE_FEATURES, *(run.feature for run in runs), *(row["feature"] for row in rows)]
    present = {run.feature for run in runs} | {row["feature"] for row in rows}
    features = [feature for feature in dict.fromkeys(seen) if feature in present]
    print("\n### features: does each checker handle it (from the runs above)\n")
    print("| feature | torch | JAX | scipy check_grad | gradcheck |")
    print("| --- | --- | --- | --- | --- |")
    table = []
    for feature in features:
        of = [run for run in runs if run.feature == feature]
        numpy_rows = [row for row in rows if row["feature"] == feature]
        separates = [r["check_grad_separates"] for r in numpy_rows if r["check_grad_separates"] is not None]
        scipy = "—" if not separates else "yes" if all(separates) else "no"
        line = {
            "feature": feature,
            "torch": peer_cell([run for run in of if run.framework == "torch"]),
            "jax": peer_cell([run for run in of if run.framework == "jax"]),
            "scipy": scipy,
            "gradcheck": gradcheck_cell(of, numpy_rows),
        }
        table.append(line)
        print(f"| {feature} | {line['torch']} | {line['jax']} | {line['scipy']} | {line['gradcheck']} |")
    return table


# The command.


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="comma-separated: torch, jax, numpy")
    parser.add_argument("--only", help="comma-separated parts of scenario names: run only the scenarios that match one")
    parser.add_argument("--limit", type=int, help="at most this many scenarios per framework")
    parser.add_argument("--json-out", help="write every run, the numpy cases and the feature table to this file")
    arguments = parser.parse_args(argv)
    arguments.frameworks = [name.strip() for name in arguments.frameworks.split(",") if name.strip()]
    for name in arguments.frameworks:
        if name not in FRAMEWORKS:
            parser.error(f"--frameworks: unknown framework {name!r} (torch, jax or numpy)")
    arguments.only = None if arguments.only is None else [part.strip() for part in arguments.only.split(",")]
    return arguments


def selection(arguments) -> Callable:
    """The scenarios a framework runs: those whose name contains a part of --only, the first --limit of them."""

    def select(scenarios) -> list:
        only = arguments.only
        chosen = [scenario for scenario in scenarios if only is None or any(part in scenario.name for part in only)]
        return chosen[: arguments.limit]

    return select


def installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def json_ready(value):
    """Non-finite floats as the strings "NaN", "inf", "-inf" (the project's JSON rule)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    return value


def main(argv=None) -> int:
    arguments = parse_arguments(argv)
    versions = {name: __import__(name).__version__ for name in ("torch", "jax", "scipy") if installed(name)}
    header("parity: the peers' own checker tests in gradcheck", **versions)
    select = selection(arguments)
    runs, rows, skipped = [], [], {}
    for framework, run in (("torch", run_torch), ("jax", run_jax)):
        if framework not in arguments.frameworks:
            continue
        if not installed(framework):
            skipped[framework] = f"{framework} is not installed: its scenarios are skipped ({INSTALL[framework]})"
            print(f"\n{skipped[framework]}")
            continue
        started = time.perf_counter()
        framework_runs = run(select)
        print_runs(framework, framework_runs)
        print_counts(framework, framework_runs)
        print(f"({framework}: {time.perf_counter() - started:.1f} s)")
        runs += framework_runs
    if "numpy" in arguments.frameworks:
        rows = run_numpy()
        print_numpy(rows)
    table = print_features(runs, rows)
    if arguments.json_out:
        document = {
            "versions": versions,
            "skipped": skipped,
            "counts": {name: counts([run for run in runs if run.framework == name]) for name in ("torch", "jax")},
            "runs": [run.to_dict() for run in runs],
            "numpy": rows,
            "features": table,
        }
        with open(arguments.json_out, "w", encoding="utf-8") as output:
            json.dump(json_ready(document), output, allow_nan=False, indent=1, ensure_ascii=False)
        print(f"wrote every run to {arguments.json_out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
