"""A user's gradient problem: an objective, named parameter arrays, and their gradients.

``gradcheck check`` and ``gradcheck taylor`` load one from ``FILE.py:FUNCTION``
or ``package.module:FUNCTION``: a function that takes no arguments and
returns a :class:`GradientProblem` or the tuple ``(objective, parameters,
gradients)``. The objective is called as ``objective(parameters)`` with the
same mapping of arrays, which the checkers perturb in place and restore.
"""

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

__all__ = ["GradientProblem"]


@dataclass(frozen=True)
class GradientProblem:
    """What to check: ``objective(parameters) -> float`` and ``gradients[name]`` per parameter.

    Parameters
    ----------
    objective : callable Mapping[str, np.ndarray] -> float
        Deterministic and side-effect-free; reads the arrays in ``parameters``.
    parameters : Mapping[str, np.ndarray]
        Writable arrays, perturbed in place one coordinate at a time.
    gradients : Mapping[str, np.ndarray]
        The analytic gradient of the objective for each parameter, same shapes.
    """

    objective: Callable[[Mapping[str, np.ndarray]], float]
    parameters: Mapping[str, np.ndarray]
    gradients: Mapping[str, np.ndarray]
