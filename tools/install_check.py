"""Exit 0 when this interpreter has gradcheck installed from this checkout with every requirement of EXTRAS.

``python tools/install_check.py CHECKOUT EXTRAS`` (EXTRAS comma-separated, as ``make`` passes them).
The Makefile's install stamp only says that pip ran once; it outlives a new virtualenv, a machine
whose site-packages were reset, or a venv where pytest was uninstalled. So make drops the stamp,
and pip runs again, unless this check passes. The check takes CHECKOUT off ``sys.path`` first,
so that it sees the installation, not the source tree it runs in.
"""

import os
import re
import sys
from importlib import metadata

DISTRIBUTION = "gradcheck-cli"


def missing_requirements(extras, requirements) -> list:
    """The distributions named by ``requirements`` (Requires-Dist strings) that are not installed.

    A requirement of an extra counts only when that extra is in ``extras``.
    """
    missing = []
    for requirement in requirements or ():
        name, _, marker = requirement.partition(";")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if extra is not None and extra.group(1) not in extras:
            continue
        distribution = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", name.strip()).group(0)
        try:
            metadata.distribution(distribution)
        except metadata.PackageNotFoundError:
            missing.append(distribution)
    return missing


def installed_from(checkout: str) -> bool:
    """Whether ``import gradcheck_cli`` finds this checkout through its installation."""
    here = os.path.realpath(checkout)
    sys.path[:] = [entry for entry in sys.path if os.path.realpath(entry or ".") != here]
    try:
        import gradcheck_cli
    except ImportError:
        return False
    return os.path.realpath(gradcheck_cli.__file__).startswith(here + os.sep)


def main(arguments) -> int:
    checkout, extras = arguments[0], {extra.strip() for extra in arguments[1].split(",") if extra.strip()}
    if not installed_from(checkout):
        return 1
    try:
        requirements = metadata.requires(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return 1
    return 1 if missing_requirements(extras, requirements) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
