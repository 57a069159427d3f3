"""Another checkout's gradcheck_cli beside this one, in the same process, for side-by-side timings.

``--baseline PATH`` in overhead.py (a work tree of an older commit, e.g.
``git worktree add /tmp/old 18c60ed``) loads PATH/gradcheck_cli under the
name ``gradcheck_baseline``: the package imports its own modules relatively,
so both versions live in one interpreter and are timed in the same
interleaved rounds. Nothing of the other checkout is copied or committed.
"""

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

NAME = "gradcheck_baseline"


def load(root: str):
    """The package at ``root``/gradcheck_cli, imported as ``gradcheck_baseline``; returns (module, label)."""
    package = Path(root).resolve() / "gradcheck_cli"
    if not (package / "__init__.py").is_file():
        raise SystemExit(f"--baseline {root}: no gradcheck_cli/__init__.py there")
    spec = importlib.util.spec_from_file_location(
        NAME, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    spec.loader.exec_module(module)
    return module, f"{root} at {commit(root)}"


def submodule(name: str):
    """``gradcheck_baseline.<name>`` (load() first)."""
    return importlib.import_module(f"{NAME}.{name}")


def commit(root: str) -> str:
    """The short commit checked out at ``root``, or 'unknown commit' outside git."""
    completed = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return completed.stdout.strip() if completed.returncode == 0 else "unknown commit"
