"""Every JSON document the tests make gradcheck write, validated against gradcheck_cli/schemas.

conftest.py wraps the two places the command line writes JSON (``render.render_chunks`` with
the json format, and ``output.write_error``), records each document a test produces, and
validates it against the schema of the subcommand that wrote it when the test ends (a
document that does not validate fails that test). Each distinct document (by its exact text)
is validated once and counted; the session's count is printed at the end of the run.
"""

import functools
import hashlib
import json
from pathlib import Path

import jsonschema

from gradcheck_cli import schemas
from gradcheck_cli.display import output, render

#: Documents larger than this are counted as skipped, not validated: the million-coordinate
#: benchmarks' output would take minutes in a pure-Python validator.
LARGEST_VALIDATED = 4 * 1024 * 1024

#: The subcommand whose schema a document follows, by its top-level keys, when no click context
#: names it (a library call of render.write).
_BY_KEYS = {
    frozenset({"quadratic", "identity", "kink", "scan", "nll", "rejected"}): "demo",
    frozenset({"scan", "advice"}): "scan",
    frozenset({"schemas"}): "schema",
    frozenset({"schema"}): "schema",
    frozenset({"error"}): "error-document",
}

validated = {}  # sha256 of the text -> schema name
skipped = set()


@functools.cache
def validator(name: str):
    if name == "error-document":
        document = {"$schema": schemas.DRAFT, **schemas.schema("demo")}
        document["anyOf"] = [{"$ref": "#/$defs/error_document"}]
        return jsonschema.Draft202012Validator(document)
    document = schemas.schema(name)
    jsonschema.Draft202012Validator.check_schema(document)
    return jsonschema.Draft202012Validator(document)


def schema_name(document, command=None) -> str:
    """The schema ``document`` must follow: its subcommand's, or the one its keys name."""
    if isinstance(document, dict) and set(document) == {"error"}:
        return command if command in schemas.NAMES else "error-document"
    if command in schemas.NAMES:
        return command
    keys = frozenset(document) if isinstance(document, dict) else frozenset()
    if keys in _BY_KEYS:
        return _BY_KEYS[keys]
    if len(keys) == 1 and next(iter(keys)) in schemas.NAMES:
        return next(iter(keys))
    raise AssertionError(f"a JSON document with keys {sorted(keys)} has no schema in gradcheck_cli/schemas")


def problems(text: str, command=None) -> list:
    """Why ``text`` (one JSON document gradcheck wrote) does not follow its schema; [] when it does."""
    if command == FOREIGN:
        return []
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if digest in validated or digest in skipped:
        return []
    if len(text) > LARGEST_VALIDATED:
        skipped.add(digest)
        return []
    document = json.loads(text)
    try:
        name = schema_name(document, command)
    except AssertionError as error:
        return [str(error)]
    error = jsonschema.exceptions.best_match(validator(name).iter_errors(document))
    found = (
        []
        if error is None
        else [f"{name}: at {'/'.join(map(str, error.absolute_path)) or 'the root'}: {error.message[:300]}"]
    )
    if name == "schema" and "schema" in document:
        jsonschema.Draft202012Validator.check_schema(document["schema"])
    if not found:
        validated[digest] = name
    return found


#: What _command_name returns inside a command that is not gradcheck's (a test's own click group).
FOREIGN = "a command that is not gradcheck's"


def _command_name():
    """The gradcheck subcommand running, None outside click, or FOREIGN."""
    import click

    from gradcheck_cli.cli import main

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    while ctx.parent is not None and ctx.parent.parent is not None:
        ctx = ctx.parent
    if (ctx.parent or ctx).command is not main:
        return FOREIGN
    return None if ctx.parent is None else ctx.info_name


class Recorder:
    """Wraps the JSON writers (render.render_chunks, output.write_error); ``documents`` holds (text, subcommand) of each one written."""

    def __init__(self):
        self.documents = []
        self.render_chunks = render.render_chunks
        self.write_error = output.write_error

    def install(self, monkeypatch):
        monkeypatch.setattr(render, "render_chunks", self._render_chunks)
        monkeypatch.setattr(output, "write_error", self._write_error)

    def _render_chunks(self, sections, output_format, stream=None):
        chunks = self.render_chunks(sections, output_format, stream)
        if output_format != "json":
            return chunks
        return self._recorded(chunks, _command_name())

    def _recorded(self, chunks, command):
        pieces = []
        for chunk in chunks:
            pieces.append(chunk)
            yield chunk
        self.documents.append(("".join(pieces), command))

    def _write_error(self, error, output_format, stdout=None, stderr=None, message=None):
        if output_format == "json":
            record = error.to_dict() if message is None else {**error.to_dict(), "message": message}
            self.documents.append((output.json_text({"error": record}), _command_name()))
        return self.write_error(error, output_format, stdout, stderr, message)


# ------------------------------------------------- docs/json.md, generated from the schemas

DOCS = Path(__file__).resolve().parent.parent / "docs" / "json.md"
BEGIN = "<!-- The rest of this file is generated from gradcheck_cli/schemas by `make golden`: edit the schemas. -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _fields_table(fields) -> list:
    lines = ["| field | type | meaning |", "|---|---|---|"]
    lines += [f"| `{field}` | {_cell(kind)} | {_cell(meaning)} |" for field, kind, meaning in fields]
    return lines


def markdown() -> str:
    """The generated part of docs/json.md: every document's objects and fields, every error kind."""
    lines = [BEGIN, ""]
    for file in (*schemas.NAMES[:-1], "defs"):
        stored = schemas.raw(file)
        lines += [f"### {file}", "", f"{stored['description']} (`gradcheck schema {file}`)"]
        if file == "defs":
            lines[-1] = f"{stored['description']} Each is bundled into the documents that use it."
        for name, description, fields in schemas.definitions(file):
            if name == file and not fields:
                continue
            lines += ["", f"**{name}**: {description}", "", *_fields_table(fields)]
        if any("error_document" in option.get("$ref", "") for option in stored.get("anyOf", [])):
            lines += ["", "Or, on bad input, the [error document](#error)."]
        lines.append("")
    stored = schemas.raw("error")
    lines += ["### error", "", f"{stored['description']} (`gradcheck schema error`) The kinds, with their fields:", ""]
    lines += ["| kind | fields besides kind and message | meaning |", "|---|---|---|"]
    for kind, node in stored["$defs"].items():
        fields = ", ".join(
            f"`{field}` ({_cell(schemas.type_text(value, 'error'))})"
            for field, value in node["properties"].items()
            if field not in ("kind", "message")
        )
        lines.append(f"| `{kind}` | {fields or '—'} | {_cell(node['description'])} |")
    return "\n".join(lines) + "\n"


def documented() -> str:
    """docs/json.md as it should be: its hand-written head, then :func:`markdown`."""
    text = DOCS.read_text(encoding="utf-8")
    head = text.split(BEGIN, 1)[0]
    return head + markdown()


if __name__ == "__main__":
    DOCS.write_text(documented(), encoding="utf-8")
