"""The optional packages the suite runs without: each test that needs one is skipped, saying how to get it.

``make test`` installs the ``bfloat16`` and ``plot`` extras; ``.ci/run`` adds torch, jax and
dask.distributed at the versions below, and runs the suite again on Python 3.10 with the oldest
numpy and none of them. torch's line is its CPU build (docs/torch.md): plain ``pip install torch``,
and so ``pip install -e '.[torch]'`` alone, downloads gigabytes of CUDA libraries.
"""

import importlib
import importlib.util

import pytest

from gradcheck_cli.core.installs import INSTALL, TORCH_CPU  # the library's messages name the same lines

__all__ = ["INSTALL", "TORCH_CPU", "reason", "installed", "require", "needs", "with_module", "bfloat16"]


def reason(module: str) -> str:
    """The skip message of a test that needs ``module``: that it is not installed, and how to get it."""
    return f"{module} is not installed: {INSTALL[module]}"


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def require(module: str):
    """``module`` imported, or the calling test (or module, at its top) skipped saying how to get it."""
    __tracebackhide__ = True  # the skip is reported at the caller's line
    return pytest.importorskip(module, reason=reason(module))


def needs(module: str):
    """A mark that skips a test, saying how to get ``module``, where it is not installed."""
    return pytest.mark.skipif(not installed(module), reason=reason(module))


def with_module(module: str, *values, id=None):
    """A parametrize case that needs ``module`` (skipped, saying so, without it)."""
    return pytest.param(*values, marks=needs(module), id=id)


#: ml_dtypes' bfloat16 scalar type, or None without ml_dtypes (its cases are then skipped).
bfloat16 = importlib.import_module("ml_dtypes").bfloat16 if installed("ml_dtypes") else None
