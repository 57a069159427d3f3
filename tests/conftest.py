import os
import signal

import pytest
from hypothesis import settings

import json_documents

# CI machines are shared and noisy: no test asserts a wall time, and hypothesis
# must not fail a correct property for being slow.
settings.register_profile("gradcheck", deadline=None, print_blob=True)
settings.load_profile("gradcheck")
os.environ.setdefault("NO_COLOR", "1")


def _still_ignored(number, frame):
    """A signal this run was started ignoring (a shell's background job ignores SIGINT, nohup SIGHUP)."""


# An ignored signal stays ignored in every process started from here, so the tests that send one to a
# child could not end it. A handler of our own keeps it ignored here, and is reset to the default in
# every child (a caught signal does not survive exec, an ignored one does).
for _name in ("SIGINT", "SIGHUP", "SIGTERM", "SIGQUIT"):
    _number = getattr(signal, _name, None)
    if _number is not None and signal.getsignal(_number) is signal.SIG_IGN:
        signal.signal(_number, _still_ignored)


@pytest.fixture(autouse=True)
def _problem_files_forgotten():
    """A problem file a test loaded in this process is not named to the processes later tests start
    (engine/loaded.py), whose start-up would then differ."""
    yield
    os.environ.pop("GRADCHECK_PROBLEM_FILES", None)


@pytest.fixture(autouse=True)
def _json_documents_follow_their_schemas(monkeypatch):
    """Every JSON document the test makes gradcheck write must follow its schema (json_documents.py)."""
    recorder = json_documents.Recorder()
    recorder.install(monkeypatch)
    yield
    found = [problem for text, command in recorder.documents for problem in json_documents.problems(text, command)]
    if found:
        pytest.fail("JSON output does not follow its schema:\n" + "\n".join(found[:20]), pytrace=False)


def pytest_terminal_summary(terminalreporter):
    if json_documents.validated or json_documents.skipped:
        terminalreporter.write_line(
            f"{len(json_documents.validated)} distinct JSON documents validated against gradcheck_cli/schemas"
            + (f" ({len(json_documents.skipped)} larger than 4 MiB not validated)" if json_documents.skipped else "")
        )
