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

# A shell that starts pytest in the background (and some CI runners) ignores SIGINT, and an ignored
# signal stays ignored in every process started from here: the Ctrl-C tests' commands could not be
# interrupted. With Python's own handler here, every child starts with SIGINT at its default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
