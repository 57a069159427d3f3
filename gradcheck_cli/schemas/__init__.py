"""The JSON Schemas (Draft 2020-12) of every JSON document gradcheck writes, shipped as package data.

One file per document in this package: each subcommand's ``--json`` output (``check.json``, ...,
each also allowing the error document), the records they share (``report``, ``taylor-result``,
``advice``, ``error``) and ``defs.json``, the shared ``$defs``. A file refers to another as
``other.json`` or ``other.json#/$defs/name``; :func:`schema` bundles one document with every
definition it reaches into a self-contained schema, which is what ``gradcheck schema NAME``
prints and what the test suite validates against. Every object lists all its fields as required
and sets ``additionalProperties: false``, so a renamed or an added field fails validation.
"""

import functools

__all__ = ["NAMES", "DRAFT", "raw", "schema", "summary", "definitions", "type_text"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: The documents, in the order ``gradcheck schema`` lists them: each subcommand's output, then the
#: records they share. ``defs`` (the shared definitions) is bundled into them, not a document.
NAMES = (
    "demo",
    "quadratic",
    "scan",
    "identity",
    "kink",
    "nll",
    "sample",
    "check",
    "taylor",
    "schema",
    "report",
    "taylor-result",
    "advice",
    "error",
)


@functools.cache
def _text(file: str) -> str:
    from importlib import (
        resources,
    )  # json and importlib.resources: loaded by a command that reads a schema, not by --help

    return resources.files(__package__).joinpath(f"{file}.json").read_text(encoding="utf-8")


def raw(file: str) -> dict:
    """The schema file ``file`` (a name of :data:`NAMES`, or ``defs``) as stored, references unresolved."""
    if file not in (*NAMES, "defs"):
        raise KeyError(file)
    import json

    return json.loads(_text(file))


def schema(name: str) -> dict:
    """The self-contained schema of document ``name``: every definition it reaches in its ``$defs``.

    A reference ``other.json#/$defs/x`` becomes ``#/$defs/x``, and ``other.json`` (another document
    whole) ``#/$defs/other``. Definition names are unique across the files.
    """
    import copy

    root = raw(name)
    bundled = {}
    pending = []

    def rewrite(node, file):
        if isinstance(node, list):
            return [rewrite(item, file) for item in node]
        if not isinstance(node, dict):
            return node
        result = {}
        for key, value in node.items():
            if key == "$ref":
                result[key] = resolve(value, file)
            elif key == "$defs" and file != name:
                continue
            else:
                result[key] = rewrite(value, file)
        return result

    def resolve(reference: str, file: str) -> str:
        target, _, fragment = reference.partition("#")
        target = target[: -len(".json")] if target else file
        if not fragment:
            if target == name:
                return "#"
            pending.append((target, target, None))
            return f"#/$defs/{target}"
        definition = fragment.rsplit("/", 1)[1]
        if target != name:
            pending.append((definition, target, definition))
        return f"#/$defs/{definition}"

    document = rewrite(root, name)
    while pending:
        key, file, definition = pending.pop()
        source = raw(file)
        part = source if definition is None else source["$defs"][definition]
        part = {k: v for k, v in part.items() if k not in ("$schema", "$defs")}
        made = rewrite(copy.deepcopy(part), file) if key not in bundled else None
        if made is None:
            continue
        if key in document.get("$defs", {}):
            raise ValueError(f"definition {key!r} of {file}.json is also one of {name}.json")
        bundled[key] = made
    if bundled:
        document["$defs"] = {**document.get("$defs", {}), **dict(sorted(bundled.items()))}
    return document


def summary() -> list:
    """``[{"name", "title", "description"}]`` of every document, in :data:`NAMES` order."""
    return [{"name": name, "title": raw(name)["title"], "description": raw(name)["description"]} for name in NAMES]


def type_text(node: dict, here: str = "") -> str:
    """A field's type in a few words: ``float``, ``[int]``, ``null | difference``, ``"a" | "b"``.

    ``here`` is the name of the document whose root ``#`` refers to.
    """
    import json

    if "$ref" in node:
        target = node["$ref"].rsplit("/", 1)[-1]
        target = here if target == "#" else target.removesuffix(".json")
        return {"float": "float", "shape": "[int]", "coordinate": "[int]"}.get(target, target)
    if "const" in node:
        return json.dumps(node["const"], ensure_ascii=False)
    if "enum" in node:
        return " | ".join(json.dumps(value, ensure_ascii=False) for value in node["enum"])
    if "anyOf" in node:
        return " | ".join(type_text(option, here) for option in node["anyOf"])
    kind = node.get("type")
    if kind == "array":
        return f"[{type_text(node.get('items', {}), here)}]"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"{{str: {type_text(node['additionalProperties'], here)}}}"
    return {"integer": "int", "boolean": "bool", "string": "str", "null": "null", "number": "float"}.get(kind, "any")


def definitions(name: str, document: dict = None) -> list:
    """Every object of a schema with fields: ``(name, description, [(field, type, description)])``.

    ``document`` is the schema (by default the file ``name`` as stored). The document itself comes
    first (named ``name``), then its ``$defs`` in order; an object nested in a field is listed after
    its parent, named after the field.
    """
    found = []

    def visit(name, node):
        if "properties" in node:
            fields, nested = [], []
            for field, value in node["properties"].items():
                inner = value.get("items", {}) if value.get("type") == "array" else value
                if "properties" in inner:
                    fields.append((field, f"[{field}]" if inner is not value else field, value.get("description", "")))
                    nested.append((field, inner))
                else:
                    fields.append((field, type_text(value, here), value.get("description", "")))
            found.append((name, node.get("description", ""), fields))
            for field, inner in nested:
                visit(field, inner)
        for option in node.get("anyOf", []) + node.get("oneOf", []):
            visit(name, option)

    root = raw(name) if document is None else document
    here = name
    visit(name, root)
    for name, node in root.get("$defs", {}).items():
        visit(name, node)
    return found
