"""A user's gradient problem: an objective, named parameter arrays, and their gradients (the public face
of :mod:`gradcheck_cli.engine.problem`)."""

from .engine.problem import *  # noqa: F403
from .engine.problem import __all__  # noqa: F401
