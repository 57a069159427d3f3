"""Smoke test of benchmarks/parity.py: a few scenarios of each framework run, and its tables and JSON have their shape.

Whether today's gradcheck agrees with torch and JAX is what the benchmark measures, not asserted here;
that torch and check_grads still do what each scenario records of them is (a scenario is only evidence
while its peer does what it says).
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from extras import installed, needs

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
HAS_TORCH, HAS_JAX = installed("torch"), installed("jax")
needs_torch, needs_jax = needs("torch"), needs("jax")
AGREE_CELLS = {"yes", "no: refused", "no: wrong", "no: crashed"}
CATEGORIES = {"agree", "refused", "wrong", "crashed"}


def _parity():
    sys.path.insert(0, str(BENCHMARKS))  # parity.py imports _common by plain name, as the scripts run
    try:
        spec = importlib.util.spec_from_file_location("parity", BENCHMARKS / "parity.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault("parity", module)  # dataclasses look their module up by name
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    json_out = tmp_path_factory.mktemp("parity") / "runs.json"
    frameworks = ",".join([*(["torch"] if HAS_TORCH else []), *(["jax"] if HAS_JAX else []), "numpy"])
    command = [sys.executable, str(BENCHMARKS / "parity.py"), "--frameworks", frameworks, "--limit", "3"]
    command += ["--json-out", str(json_out)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout, json.loads(json_out.read_text(encoding="utf-8"))


def _table(stdout: str, heading: str) -> list:
    """The rows of the markdown table under ``heading``, split into cells (header and rule left out)."""
    lines = stdout.split(heading, 1)[1].strip().splitlines()
    rows = []
    for line in lines:
        if not line.startswith("|"):
            if rows or line:
                break
            continue
        rows.append([cell.strip() for cell in line.replace("\\|", "¦").strip("|").split("|")])
    return rows[2:]


@needs_torch
def test_torch_table_has_a_row_per_scenario_with_both_outcomes(run):
    stdout, results = run
    rows = _table(stdout, "### torch: torch and gradcheck, scenario by scenario")
    runs = [record for record in results["runs"] if record["framework"] == "torch"]
    assert [row[0] for row in rows] == [record["scenario"] for record in runs] and len(rows) == 3
    assert all(len(row) == 6 and row[5] in AGREE_CELLS for row in rows)
    assert "torch: 3 scenarios: " in stdout


@needs_jax
def test_jax_table_has_the_right_and_the_wrong_rule_of_each_scenario(run):
    stdout, results = run
    rows = _table(stdout, "### jax: check_grads and gradcheck, scenario by scenario")
    assert [row[1] for row in rows] == ["right", "wrong"] * 3
    assert all(len(row) == 6 and row[5] in AGREE_CELLS for row in rows)
    assert "jax: 6 runs (3 scenarios × right and wrong rule): " in stdout


def test_every_run_records_both_checkers_and_the_peer_does_as_recorded(run):
    _, results = run
    assert results["runs"] or not (HAS_TORCH or HAS_JAX)
    for record in results["runs"]:
        assert record["peer"]["kind"] == record["recorded"], record
        assert record["gradcheck"]["kind"] in {"passed", "failed", "inconclusive", "refused", "raised", "crashed"}
        assert record["category"] in CATEGORIES
    for framework, counts in results["counts"].items():
        assert sum(counts.values()) == sum(record["framework"] == framework for record in results["runs"])


def test_numpy_cases_run_scipy_check_grad_beside_gradcheck(run):
    stdout, results = run
    rows = _table(stdout, "### numpy: scipy.optimize.check_grad and gradcheck_cli.check_gradients")
    assert [row[1] for row in rows] == ["right", "conjugated", "right", "conjugated", "right", "×2"]
    assert {row["feature"] for row in results["numpy"]} == {"complex inputs (Wirtinger)", "float16"}
    kind = float if installed("scipy") else type(None)  # scipy comes with jax; the oldest-versions run has neither
    assert all(isinstance(row["check_grad"], kind) for row in results["numpy"])


def test_feature_table_has_a_row_per_feature_run(run):
    stdout, results = run
    rows = _table(stdout, "### features: does each checker handle it (from the runs above)")
    features = {record["feature"] for record in results["runs"]} | {row["feature"] for row in results["numpy"]}
    assert {row[0] for row in rows} == features and len(rows) == len(features)
    assert rows[0][0] == "complex inputs (Wirtinger)"  # issue 33's features come first
    for row in rows:
        assert len(row) == 5 and (row[4] == "yes" or row[4].startswith("no: ")), row
    assert [row["feature"] for row in results["features"]] == [row[0] for row in rows]


def test_a_framework_that_is_not_installed_is_skipped_saying_so(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # find_spec says None: as if torch were not installed
    assert _parity().main(["--frameworks", "torch,numpy"]) == 0
    stdout = capsys.readouterr().out
    assert "torch is not installed: its scenarios are skipped (pip install torch==2.13.0" in stdout
    assert "### torch:" not in stdout and "### numpy:" in stdout


def test_gradcheck_outcome_tells_a_refusal_from_a_crash():
    parity = _parity()
    from gradcheck_cli.errors import InvalidCall

    def raising(error):
        def call():
            raise error

        return call

    unknown_option = TypeError("check_gradients() got an unexpected keyword argument 'batched'")
    assert parity.gradcheck_outcome(raising(unknown_option), None).kind == "refused"
    assert parity.gradcheck_outcome(raising(InvalidCall(call="f", problem="p")), None).kind == "refused"
    assert parity.gradcheck_outcome(raising(TypeError("can't convert Sparse layout")), None).kind == "crashed"
    own = RuntimeError("Not a GradcheckError!")
    assert parity.gradcheck_outcome(raising(own), RuntimeError("Not a GradcheckError!")).kind == "raised"
    assert parity.gradcheck_outcome(raising(own), None).kind == "crashed"
