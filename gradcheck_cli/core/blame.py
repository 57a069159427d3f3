"""Whose code raised: the frames of a traceback in the user's own files, and one line for any exception.

Beside engine/problem.py, which loads the user's code: the CLI names the innermost line of the user's
code that raised, and check/parallel.py carries it across processes (``RAISED_IN_WORKER``).
"""

import os

from .formatting import escaped

__all__ = [
    "RAISED_IN_WORKER",
    "exception_line",
    "raised_in_users_code",
    "raised_in_worker",
    "user_frames",
    "user_location",
    "user_traceback",
]


def user_frames(error: BaseException) -> list:
    """The traceback entries of ``error`` in the user's own files: not gradcheck's, the standard
    library's or an installed package's."""
    return [frame for frame, owner in _frame_owners(error) if owner == "user"]


def raised_in_users_code(error: BaseException) -> bool:
    """Whether the innermost frame of ``error`` that is gradcheck's or the user's is the user's: their
    mapping's or array's method raised (maybe through numpy), not gradcheck's code called by theirs."""
    owners = [owner for _, owner in _frame_owners(error) if owner != "library"]
    return bool(owners) and owners[-1] == "user"


def _frame_owners(error: BaseException) -> list:
    """``(frame, owner)`` for each traceback entry, owner "gradcheck", "library" or "user"."""

    import sysconfig
    import traceback

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package: core/ is one floor down
    libraries = {os.path.abspath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    owners = []
    for frame in traceback.extract_tb(error.__traceback__):
        path = os.path.abspath(frame.filename)
        if path.startswith(here + os.sep):
            owners.append((frame, "gradcheck"))
        elif frame.filename.startswith("<") or any(path.startswith(root + os.sep) for root in libraries):
            owners.append((frame, "library"))  # <frozen importlib._bootstrap>, <string> too
        else:
            owners.append((frame, "user"))
    return owners


def user_location(error: BaseException) -> str:
    """`` (at mymodel.py:41 in loss)``: the innermost line of the user's own code that raised, or ""."""

    frames = user_frames(error)
    if not frames:
        return ""
    frame = frames[-1]
    path = os.path.abspath(frame.filename)
    shown = os.path.relpath(path) if path.startswith(os.getcwd() + os.sep) else path
    return f" (at {escaped(shown)}:{frame.lineno} in {escaped(frame.name)})"


def user_traceback(error: BaseException) -> str:
    """The user's frames of ``error`` in Python's traceback form, then its one line."""
    import traceback

    lines = "".join(traceback.format_list(user_frames(error))).splitlines()
    frames = "".join(escaped(line) + "\n" for line in lines)
    return "Traceback of your code (most recent call last):\n" + frames + exception_line(error) + "\n"


#: The attribute that carries, on an exception the objective raised in a worker process (jobs ≥ 2),
#: ``(user_location, user_traceback)`` as they were there: the traceback does not cross processes.
RAISED_IN_WORKER = "_gradcheck_raised_in_worker"


def raised_in_worker(error: BaseException):
    """``(location, traceback)`` of the user's code if the objective raised ``error`` in a worker
    process (parallel.py marks it there), else None."""
    marked = getattr(error, RAISED_IN_WORKER, None)
    return marked if isinstance(marked, tuple) and len(marked) == 2 else None


def exception_line(error: BaseException) -> str:
    """``Name: message`` of any exception on one line, every character that is not printable escaped
    (:func:`escaped`); its name alone if it has no message."""
    try:
        text = " ".join(escaped(word) for word in str(error).replace("\t", " ").replace("\n", " ").split(" ") if word)
    except Exception:  # an exception whose __str__ raises still has a name
        text = ""
    name = escaped(type(error).__name__)
    return f"{name}: {text}" if text else name
