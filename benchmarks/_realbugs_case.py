"""What a real-bug case is: a publicly reported backward-pass mistake, rebuilt as a buggy and a fixed version.

Shared by benchmarks/realbugs.py and its case modules (_realbugs_numpy.py, _realbugs_torch.py,
_realbugs_jax.py); imports neither torch nor JAX.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: The diagnosis kinds a case may name as right (gradcheck_cli.verdict.diagnosis.KINDS without "unexplained").
SPECIFIC_KINDS = ("scale", "sign", "transpose", "zero", "localized")


@dataclass(frozen=True)
class RealBug:
    """One reported mistake.

    ``build(dtype, rng, buggy)`` returns the problem in its framework's form: numpy
    ``(objective, parameters, gradients)``, torch ``(fn, inputs)``, JAX ``(fn, args)``; the same
    ``rng`` state gives the same data to the buggy and the fixed version. ``reaches`` names the
    parameters whose gradient the mistake changes (as gradcheck names them), ``kinds`` the
    diagnosis kinds that describe it truthfully (empty when none of gradcheck's kinds does),
    ``factor`` the scale a ``scale`` diagnosis should find (None when it depends on the data).
    """

    name: str
    framework: str
    source: str
    mistake: str
    reaches: tuple
    kinds: tuple
    build: Callable
    order: int = 1
    factor: float | None = None
    dtypes: tuple = ("float64", "float32")

    def __post_init__(self):
        unknown = set(self.kinds) - set(SPECIFIC_KINDS)
        if unknown:
            raise ValueError(f"case {self.name}: unknown kinds {sorted(unknown)}")


def case_rng(name: str, dtype: str) -> np.random.Generator:
    """The case's data: the same for its buggy and fixed versions, different per case and dtype."""
    return np.random.default_rng([zlib.crc32(name.encode()), 1 if dtype == "float32" else 0])


def cast(dtype, **arrays) -> dict:
    """Fresh writable arrays of ``dtype``."""
    return {name: np.array(value, dtype=dtype) for name, value in arrays.items()}


def float64(parameters) -> dict:
    return {name: np.asarray(value, dtype=np.float64) for name, value in parameters.items()}
