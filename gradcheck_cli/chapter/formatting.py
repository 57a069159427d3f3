"""Where check/plan.py still imports ``rust_list`` from: the formats are :mod:`gradcheck_cli.formatting`.

To be deleted once check/plan.py imports ``from ..formatting import rust_list``.
"""

from ..formatting import rust_list

__all__ = ["rust_list"]
