"""Golden command-line cases: one file per case in ``fixtures/golden/``.

Run ``make golden`` (``python tests/golden.py``) to rewrite every case from
the current code, then review ``git diff fixtures/golden`` before committing.

A case file (``fixtures/golden/<name>.txt``) reads::

    gradcheck quadratic --step 0          <- line 1: the command line, shell-quoted
    # exit: 2                             <- only when the exit status is not 0
    # stderr: Error: central-difference…  <- one per stderr line, only when there is any
    …                                     <- the rest of the file: stdout, byte for byte

So a successful case is exactly its command line followed by its stdout,
and a missing ``# exit:`` line means exit status 0 and no missing
``# stderr:`` line means an empty stderr. A case named after a bare
subcommand whose first line is not a command line is that subcommand's
stdout alone (exit status 0, nothing on stderr): ``demo.txt`` is exactly
what ``gradcheck demo`` prints, as README.md says. To add a case, create a
file holding just the command line and run ``make golden``; files under
``fixtures/golden/inputs/`` are input data, not cases.

Every case runs in-process through click's CliRunner (stdout and stderr kept
apart) from the repository root, so relative paths such as
``fixtures/golden/inputs/logits-3x4.json`` appear as written, with
``NO_COLOR=1`` and ``COLUMNS`` unset, so table output is plain and 120 columns
wide. ``tests/test_golden.py`` compares every file with a fresh run and also
regenerates the whole directory into a temporary one to prove that ``make
golden`` would change nothing.
"""

import contextlib
import os
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_DIR = ROOT / "fixtures" / "golden"
PROGRAM = "gradcheck"
EXIT_HEADER = "# exit: "
STDERR_HEADER = "# stderr: "
ENVIRONMENT = {"NO_COLOR": "1", "COLUMNS": None, "FORCE_COLOR": None}


def case_paths(directory: Path = GOLDEN_DIR) -> list:
    """Every case file, sorted by name."""
    return sorted(directory.glob("*.txt"))


def command_line(case_text: str, name: str = "") -> str:
    """The command line of a case: its first line, or ``gradcheck NAME`` for a bare case (its output alone)."""
    first = case_text.split("\n", 1)[0]
    return f"{PROGRAM} {name}" if is_bare(case_text, name) else first


def is_bare(case_text: str, name: str) -> bool:
    """Whether the case file named ``name`` (without .txt) holds its subcommand's stdout alone."""
    return bool(name) and name.isalpha() and not case_text.startswith(f"{PROGRAM} ")


def parse_case(case_text: str, name: str = "") -> dict:
    """Split a case file into its command line, exit status, stderr and stdout."""
    if is_bare(case_text, name):
        return {"command": command_line(case_text, name), "exit_code": 0, "stderr": "", "stdout": case_text}
    command, _, rest = case_text.partition("\n")
    exit_code, stderr_lines = 0, []
    lines = rest.split("\n")
    while lines and lines[0].startswith(EXIT_HEADER):
        exit_code = int(lines.pop(0)[len(EXIT_HEADER) :])
    while lines and lines[0].startswith(STDERR_HEADER):
        stderr_lines.append(lines.pop(0)[len(STDERR_HEADER) :] + "\n")
    return {"command": command, "exit_code": exit_code, "stderr": "".join(stderr_lines), "stdout": "\n".join(lines)}


def format_case(command: str, exit_code: int, stdout: str, stderr: str) -> str:
    """The case file's text for one run (the inverse of :func:`parse_case`)."""
    headers = [f"{EXIT_HEADER}{exit_code}"] if exit_code else []
    headers += [f"{STDERR_HEADER}{line}" for line in stderr.splitlines()]
    return "\n".join([command, *headers, stdout]) if headers else f"{command}\n{stdout}"


@contextlib.contextmanager
def _working_directory(path: Path):
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def run(command: str):
    """Run one ``gradcheck …`` command line in-process; return (exit code, stdout, stderr)."""
    from click.testing import CliRunner

    from gradcheck_cli.cli import main

    words = shlex.split(command)
    if not words or words[0] != PROGRAM:
        raise ValueError(f"a golden command line starts with {PROGRAM!r}: {command!r}")
    with _working_directory(ROOT):
        result = CliRunner(env=ENVIRONMENT).invoke(main, words[1:], prog_name=PROGRAM, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def render_case(command: str, bare: bool = False) -> str:
    """The text a case file with this command line must hold (``bare``: its stdout alone, when it exits
    0 with nothing on stderr)."""
    exit_code, stdout, stderr = run(command)
    if bare and exit_code == 0 and not stderr:
        return stdout
    return format_case(command, exit_code, stdout, stderr)


def case_command(path: Path) -> tuple:
    """``(command line, bare)`` of the case file at ``path``."""
    text = path.read_bytes().decode("utf-8")
    return command_line(text, path.stem), is_bare(text, path.stem)


def regenerate(source: Path = GOLDEN_DIR, target: Path = GOLDEN_DIR) -> list:
    """Write every case of ``source``, freshly run, into ``target``; return the names that changed."""
    changed = []
    for path in case_paths(source):
        old = path.read_bytes().decode("utf-8")
        new = render_case(*case_command(path))
        if new != old:
            changed.append(path.name)
        destination = target / path.name
        if destination != path or new != old:
            destination.write_bytes(new.encode("utf-8"))
    return changed


def main() -> int:
    changed = regenerate()
    for name in changed:
        print(f"rewrote fixtures/golden/{name}", file=sys.stderr)
    print(f"{len(case_paths())} golden cases, {len(changed)} rewritten", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
