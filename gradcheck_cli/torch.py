"""Check torch code directly (the public face of :mod:`gradcheck_cli.adapters.torch`)."""

from .adapters.torch import *  # noqa: F403
from .adapters.torch import __all__  # noqa: F401
