"""Smoke test of benchmarks/opinfo.py: it runs on a few ops and writes its tables and JSON.

Rates are not asserted (a benchmark measures); the structure the lead reads is.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from extras import require

torch = require("torch")
require("expecttest")

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
MUTATIONS = {"none", "double", "sign", "shift", "one-double", "one-shift"}


def _cases_module():
    spec = importlib.util.spec_from_file_location("_opinfo_cases", BENCHMARKS / "_opinfo_cases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("_opinfo_cases", module)  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_parameters_are_views_that_torch_reads():
    tensor = torch.arange(6, dtype=torch.float64).reshape(2, 3).requires_grad_(True)
    view = _cases_module()._numpy_view(tensor)
    view[1, 2] = 42.5
    assert tensor[1, 2].item() == 42.5
    assert _cases_module()._numpy_view(torch.zeros(3, dtype=torch.float64).expand(4, 3)) is None


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    json_out = tmp_path_factory.mktemp("opinfo") / "cases.json"
    command = [
        sys.executable,
        str(BENCHMARKS / "opinfo.py"),
        "--ops",
        "sin,mul",
        "--max-samples-per-op",
        "1",
        "--jobs",
        "1",
    ]
    completed = subprocess.run(
        [*command, "--json-out", str(json_out)], capture_output=True, text=True, timeout=120, cwd=BENCHMARKS.parent
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout, json.loads(json_out.read_text(encoding="utf-8"))


def test_prints_a_table_per_dtype(run):
    stdout, _ = run
    assert "--- float64: 2 ops, 2 cases" in stdout
    assert "--- float32: 2 ops, 2 cases" in stdout
    assert "torch.autograd.gradcheck" in stdout
    for mutation in MUTATIONS - {"none"}:
        assert f"\n{mutation} " in stdout


def test_json_has_every_case_with_its_outcome(run):
    _, results = run
    assert set(results["dtypes"]) == {"float64", "float32"}
    for dtype, section in results["dtypes"].items():
        cases = section["cases"]
        assert {case["op"] for case in cases} == {"sin", "mul"}
        assert {case["mutation"] for case in cases} == MUTATIONS
        for case in cases:
            assert case["dtype"] == dtype
            assert case["verdict"] in {"passed", "failed", "inconclusive", "error", "skipped"}
            assert case["smoothness"] in {"smooth", "ill-conditioned", "rejected"}
            assert case["smooth"] == (case["smoothness"] == "smooth")
            assert set(case["shapes"]) >= {"input"}
            if case["verdict"] != "skipped":
                assert case["evaluations"] > 0 and case["restored"] is True
                assert isinstance(case["failures"], list)
            assert ("torch" in case) == (dtype == "float64" and case["verdict"] != "skipped")
