"""The optional extras: without one, its tests are skipped naming the install line CI uses (tests/extras.py),
never ``pip install -e '.[torch]'``, which resolves torch's CUDA build (gigabytes; docs/torch.md)."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import extras

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


def test_the_install_lines_are_the_versions_ci_installs_and_torch_md_shows():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for module, pin in (("torch", "torch==2.13.0"), ("jax", "jax==0.6.2"), ("distributed", "distributed==2026.8.0")):
        assert pin in extras.INSTALL[module] and re.search(rf"pip install [^\n]*\b{re.escape(pin)}\b", ci), module
    assert "--index-url https://download.pytorch.org/whl/cpu" in extras.TORCH_CPU
    assert extras.TORCH_CPU in (ROOT / "docs" / "torch.md").read_text(encoding="utf-8")
    assert not any("-e " in line or ".[" in line for line in extras.INSTALL.values())


def _skips(path: Path):
    """(line, what) of every skip in a test module that does not go through tests/extras.py: a call of
    ``importorskip`` (but for setuptools and wheel, which are no extra), or a skip whose message says
    ``pip install``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr == "importorskip":
            module = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            if module not in ("setuptools", "wheel", "jax.numpy"):
                yield node.lineno, f"importorskip({module!r})"
        elif node.func.attr in ("skip", "skipif") and "pip install" in ast.unparse(node):
            yield node.lineno, ast.unparse(node)


def test_every_skip_of_an_optional_module_names_the_install_line_from_extras():
    found = [f"{path.name}:{line}: {what}" for path in sorted(TESTS.glob("test_*.py")) for line, what in _skips(path)]
    assert found == []


@pytest.mark.parametrize("module", ["torch", "jax", "distributed", "ml_dtypes", "matplotlib"])
def test_a_missing_module_is_a_skip_naming_its_install_line(module, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # what `import module` then raises: ImportError
    assert not extras.installed(module)
    with pytest.raises(pytest.skip.Exception) as caught:
        extras.require(module)
    assert str(caught.value) == f"{module} is not installed: {extras.INSTALL[module]}"


def test_without_torch_and_jax_their_test_modules_are_skipped_naming_the_cpu_lines():
    """A run in which torch and jax cannot be imported: what pytest -rs reports for their test modules."""
    blocked = "import sys; sys.modules.update(torch=None, jax=None); import pytest; "
    run = f"{blocked}sys.exit(pytest.main(['-q', '-rs', '-p', 'no:cacheprovider', 'test_torch.py', 'test_jax.py']))"
    result = subprocess.run([sys.executable, "-c", run], cwd=TESTS, capture_output=True, text=True, timeout=300)
    assert result.returncode == 5, result.stdout  # nothing collected: both modules skipped
    skipped = sorted(line.split("] ", 1)[1] for line in result.stdout.splitlines() if line.startswith("SKIPPED"))
    assert [line.split(": ", 1)[0].split(":")[0] for line in skipped] == ["test_jax.py", "test_torch.py"]
    assert skipped[0].endswith(f": {extras.reason('jax')}") and "pip install jax==0.6.2" in skipped[0]
    assert skipped[1].endswith(f": {extras.reason('torch')}") and extras.TORCH_CPU in skipped[1]
