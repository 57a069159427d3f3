"""The problem files loaded as modules, findable by their module names in the processes the problem's
code starts: a ``multiprocessing`` pool by spawn or forkserver unpickles the objective's helpers by
module name (``_gradcheck_problem_model.square``), which no directory on ``sys.path`` holds."""

import importlib.abc
import importlib.util
import json
import os
import sys

__all__ = ["LOADED_FILES", "remember", "find_loaded_files"]

#: The environment variable, inherited by every process started meanwhile, that maps each module name
#: of a loaded problem file to its path (JSON).
LOADED_FILES = "GRADCHECK_PROBLEM_FILES"


def _files() -> dict:
    try:
        files = json.loads(os.environ.get(LOADED_FILES, "{}"))
    except ValueError:
        return {}
    return files if isinstance(files, dict) else {}


def remember(module_name: str, path: str) -> None:
    """Name ``path``, loaded as module ``module_name``, to the processes started from now on."""
    files = _files()
    if files.get(module_name) != path:
        os.environ[LOADED_FILES] = json.dumps({**files, module_name: path})


class _LoadedFiles(importlib.abc.MetaPathFinder):
    """Finds a loaded problem file by its module name, after every other finder."""

    def find_spec(self, name, path=None, target=None):
        file = _files().get(name)
        return None if not isinstance(file, str) else importlib.util.spec_from_file_location(name, file)


def find_loaded_files() -> None:
    """In a process started by a problem's code: its problem files importable by their module names."""
    if not any(isinstance(finder, _LoadedFiles) for finder in sys.meta_path):
        sys.meta_path.append(_LoadedFiles())
