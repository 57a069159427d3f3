"""README.md and docs/*.md, as written: every session runs, every option and link exists.

A session is a fenced block (plain or ``console``) of ``$ gradcheck ...`` lines, each followed by
the lines it prints; docs/development.md states the format. Python blocks that are doctests run as
doctests, and the README's own-code example is examples/line.py, verbatim.
"""

import contextlib
import doctest
import importlib.util
import io
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from extras import reason
from gradcheck_cli.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None


def invoke(*arguments):
    runner = CliRunner(env={"NO_COLOR": "1", "COLUMNS": None})
    return runner.invoke(main, list(arguments), prog_name="gradcheck", catch_exceptions=False)


def fenced_blocks(path):
    """(language, lines) of every fenced block of ``path``."""
    blocks, block, language = [], None, None
    for line in path.read_text(encoding="utf-8").splitlines():
        if block is None and line.startswith("```"):
            block, language = [], line[3:].strip()
        elif block is not None and line == "```":
            blocks.append((language, block))
            block = None
        elif block is not None:
            block.append(line)
    assert block is None, f"{path.name}: a fenced block is not closed"
    return blocks


def _sessions():
    """Every ``$ gradcheck ...`` in a plain or console block: the command, the lines shown, the exit status.

    An exit status is shown as ``$ echo $?`` and a number after the output,
    or as ``gradcheck ... > /dev/null; echo $?`` and a number.
    """
    sessions = []
    for path in DOCUMENTS:
        for language, block in fenced_blocks(path):
            if language not in ("", "console"):
                continue
            current, status_next = None, False
            for line in block:
                if line == "$ echo $?" and current is not None:
                    status_next = True
                elif line.startswith("$ "):
                    command, _, rest = line[2:].partition(";")
                    status_next = rest.strip() == "echo $?"
                    current = {"document": path.name, "command": command.split(" > ")[0].strip()}
                    current.update(output=[], status=None)
                    sessions.append(current)
                elif current is not None and status_next:
                    current["status"], status_next = int(line), False
                elif current is not None:
                    current["output"].append(line)
    return [session for session in sessions if session["command"].startswith("gradcheck ")]


SESSIONS = _sessions()


def test_every_subcommand_is_shown_in_a_session():
    shown = {shlex.split(session["command"])[1] for session in SESSIONS}
    assert set(main.list_commands(None)) <= shown
    assert any("--advise" in session["command"] for session in SESSIONS)
    assert {session["document"] for session in SESSIONS} >= {"README.md", "cli.md", "json.md", "method.md", "torch.md"}


@pytest.mark.parametrize(
    "session", SESSIONS, ids=[f"{session['document']}: {session['command']}" for session in SESSIONS]
)
def test_every_session_prints_what_it_shows(session, monkeypatch):
    """Each shown line is in the real output; a line ending in '...' is a prefix; '...' alone skips."""
    if "examples/torch_" in session["command"] and not HAS_TORCH:
        pytest.skip(f"this session checks torch code, and {reason('torch')}")
    monkeypatch.chdir(ROOT)
    result = invoke(*shlex.split(session["command"])[1:])
    actual = [line.rstrip() for line in (result.stdout + result.stderr).splitlines()]
    for line in session["output"]:
        if line.strip() in ("", "..."):
            continue
        if line.endswith("..."):
            assert any(candidate.startswith(line[:-3].rstrip()) for candidate in actual), line
        else:
            assert line.rstrip() in actual, line
    if session["status"] is not None:
        assert result.exit_code == session["status"]


def _command_spans():
    """Every `gradcheck SUBCOMMAND ...` the documents write, in inline code, headings or sessions; a
    session that shows its option refused (``No such option``) misspells it on purpose."""
    spans = [
        session["command"] for session in SESSIONS if not any("No such option" in line for line in session["output"])
    ]
    for path in DOCUMENTS:
        spans += re.findall(r"`(gradcheck [^`]+)`", path.read_text(encoding="utf-8"))
    return sorted(set(spans))


def test_every_option_the_docs_name_exists_on_its_subcommand():
    named = 0
    for span in _command_spans():
        words = span.replace("[", " ").replace("]", " ").replace("|", " ").split()
        if len(words) < 2 or words[1] not in main.list_commands(None):
            continue
        options = {option for parameter in main.get_command(None, words[1]).params for option in parameter.opts}
        for word in words[2:]:
            if word.startswith("--"):
                named += 1
                assert word.split("=")[0] in options | {"--help"}, f"{span!r}: gradcheck {words[1]} has no {word}"
    assert named > 40  # the check sees the documents' options at all


def _anchors(path):
    """The anchors GitHub gives the headings of ``path``: lower case, punctuation dropped, spaces to hyphens."""
    anchors, seen, fenced = set(), {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        if fenced or not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def test_every_relative_link_and_anchor_resolves():
    checked = 0
    for path in DOCUMENTS:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            assert linked.exists(), f"{path.name}: {target} does not exist"
            if anchor:
                assert anchor in _anchors(linked), f"{path.name}: {target} names no heading of {linked.name}"
            checked += 1
    assert checked > 30


def test_the_readme_is_short_and_its_example_is_examples_line_py():
    readme = ROOT / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= 300
    example = (ROOT / "examples" / "line.py").read_text(encoding="utf-8")
    assert ["\n".join(block) + "\n" for language, block in fenced_blocks(readme) if language == "python"][0] == example


def _doctests():
    return [
        pytest.param("\n".join(block), id=f"{path.name}: {block[0]}")
        for path in DOCUMENTS
        for language, block in fenced_blocks(path)
        if language == "python" and block[0].startswith(">>> ")
    ]


@pytest.mark.parametrize("source", _doctests())
def test_every_doctest_in_the_docs_passes(source, monkeypatch):
    if "import torch" in source and not HAS_TORCH:
        pytest.skip(f"this doctest runs torch code, and {reason('torch')}")
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))  # as python started in the repository's root has it
    test = doctest.DocTestParser().get_doctest(source, {}, "docs", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False) == doctest.TestResults(failed=0, attempted=len(test.examples))


#: A script block's line that shows its output: ``print(...)  # what it prints``.
SHOWN_OUTPUT = re.compile(r"^print\(.*\)\s+# (.*)$")


def _scripts_with_output():
    return [
        pytest.param("\n".join(block), id=f"{path.name}: {block[0]}")
        for path in DOCUMENTS
        for language, block in fenced_blocks(path)
        if language == "python" and not block[0].startswith(">>> ") and any(map(SHOWN_OUTPUT.match, block))
    ]


@pytest.mark.parametrize("source", _scripts_with_output())
def test_every_script_in_the_docs_prints_what_its_comments_show(source, monkeypatch):
    for module, present in (("torch", HAS_TORCH), ("jax", HAS_JAX)):
        if f"import {module}" in source and not present:
            pytest.skip(f"this script runs {module} code, and {reason(module)}")
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))  # as python started in the repository's root has it
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, "docs", "exec"), {"__name__": "docs"})
    shown = [match.group(1) for match in map(SHOWN_OUTPUT.match, source.splitlines()) if match]
    assert printed.getvalue().splitlines() == shown
