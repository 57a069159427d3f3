"""Check JAX code directly (the public face of :mod:`gradcheck_cli.adapters.jax`)."""

from .adapters.jax import *  # noqa: F403
from .adapters.jax import __all__  # noqa: F401
