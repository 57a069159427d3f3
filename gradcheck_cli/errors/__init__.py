"""Typed errors: one class per rejected request, with the chapter's messages.

A mathematical mismatch is not an error (it is a comparison with ``passed=False``); these are
requests the checker refuses to answer. Every error is a record (``record.py``): its ``fields``,
keyword arguments in the order ``to_dict()`` writes them, and one message ``template``, floats
printed as the chapter's Rust ``{:?}`` prints them.

The classes are imported on first use (PEP 562 ``__getattr__``): the first name of ``requests.py``
imports that module, the first name of ``user_code.py`` both, and the first of ``command_line.py``
(the errors only the command line raises) all three. ``gradcheck --help`` needs only
GradCheckError, ``gradcheck quadratic`` only the estimator's requests; neither loads the errors of
a user's problem.
"""

from .record import GradCheckError  # noqa: F401 (the base every command needs: not lazy)

#: The modules that declare the errors, in the order ``__all__`` lists their names.
_DECLARING = ("requests", "user_code", "command_line")


def _declaring_modules():
    """The modules of :data:`_DECLARING`, each imported when the one before it is exhausted."""
    from . import requests

    yield requests
    from . import user_code

    yield user_code
    from . import command_line

    yield command_line


def __getattr__(name: str):
    if name in _DECLARING or (name.startswith("__") and name != "__all__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")  # a submodule not imported yet
    names = ["GradCheckError"]
    for module in _declaring_modules():
        if name in module.__all__:
            value = globals()[name] = getattr(module, name)  # found here from now on
            return value
        names += module.__all__
    if name == "__all__":
        globals()["__all__"] = names
        return names
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__getattr__("__all__")})
