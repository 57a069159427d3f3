"""Smoke test of benchmarks/realbugs.py: a few real-bug cases run and write their tables and JSON.

Rates are not asserted (a benchmark measures), except that none of these bugs passes a parameter
it reaches; the structure is, and that every case's bug
changes the gradient where the case says (the script stops otherwise).
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
NUMPY_CASES = ["cbow_repeated_context_word", "maxpool_return_inside_loop", "swish_beta_missing_sigmoid_derivative"]
#: A first-order case per optional framework, and a second-order one (its checks are labelled by path,
#: ``inputs[0] (rev∘rev)``), run when the framework is installed.
OPTIONAL_CASES = {
    "torch": ["mulconstant_backward_missing_constant", "detached_copy_double_backward"],
    "jax": ["custom_vjp_sign_of_dy", "sinc_second_derivative_at_zero"],
}
VERDICTS = {"passed", "failed", "inconclusive"}


def installed() -> list:
    return [name for name in OPTIONAL_CASES if importlib.util.find_spec(name) is not None]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    json_out = tmp_path_factory.mktemp("realbugs") / "runs.json"
    frameworks = ["numpy", *installed()]
    cases = NUMPY_CASES + [case for name in frameworks[1:] for case in OPTIONAL_CASES[name]]
    command = [
        sys.executable,
        str(BENCHMARKS / "realbugs.py"),
        "--frameworks",
        ",".join(frameworks),
        "--cases",
        ",".join(cases),
        "--json-out",
        str(json_out),
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    return frameworks, completed.stdout, json.loads(json_out.read_text(encoding="utf-8"))


def test_prints_a_table_per_framework_with_both_dtypes(run):
    frameworks, stdout, _ = run
    assert stdout.startswith("== real, publicly reported gradient bugs")
    assert "\nmachine: " in stdout and "\nreproduce: python benchmarks/realbugs.py" in stdout
    assert "--- numpy: 3 cases × float64, float32; peer: none (the recipe only)" in stdout
    for framework in frameworks[1:]:
        assert f"--- {framework}: {len(OPTIONAL_CASES[framework])} cases × float64, float32; peer: " in stdout
    assert stdout.count("| dtype | fixed passed | bugs failed | reached parameters passed |") == len(frameworks)
    assert stdout.count("where gradcheck is wrong or weak:") == len(frameworks)
    for dtype in ("float64", "float32"):
        assert stdout.count(f"\n| {dtype} | ") == len(frameworks)


def test_json_has_every_run_with_its_verdicts_and_diagnoses(run):
    frameworks, _, results = run
    assert results["machine"].startswith("machine: ")
    runs = results["runs"]
    optional = sum(len(OPTIONAL_CASES[name]) for name in frameworks[1:])
    assert len(runs) == 4 * (len(NUMPY_CASES) + optional)  # two dtypes, fixed and buggy
    assert {r["framework"] for r in runs} == set(frameworks)
    for r in runs:
        assert r["version"] in {"fixed", "bug"} and r["dtype"] in {"float64", "float32"}
        assert r["source"].startswith("https://") and r["mistake"] and r["reaches"]
        assert r["verdict"] in VERDICTS and set(r["parameters"].values()) <= VERDICTS
        assert set(r["diagnoses"]) == set(r["parameters"]) == set(r["coordinates"])
        assert isinstance(r["recipe"]["passed"], bool)
        assert r["peer"] in {"passed", "failed", "n/a"} or r["peer"].startswith("error: ")
        for diagnosis in r["diagnoses"].values():
            assert diagnosis is None or diagnosis["text"].startswith(diagnosis["kind"])
        if r["version"] == "bug":
            assert r["diagnosis"] in {"right", "wrong", "misleading", "unexplained"}
            assert r["reached_parameters_passed"] == []  # a wrong gradient reported passed: none here
