"""The package's layout (issue 22): its layers, read from every module's imports with ``ast``.

Every import counts, the ones inside functions (the lazy ones) too. A module imports modules of its
own layer or of layers below it, never above, and no modules import each other in a loop. The layers
are declared once, here; docs/development.md's map describes them. Beside them: no module over 500
lines, no function over 60 (from ``def`` to its end, minus the docstring), and no private name
(``_name``) imported from another module.
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "gradcheck_cli"

#: The layers from the bottom up, one folder each (a sub-package's name and a dot for all of its
#: modules); the public faces are the modules directly in ``gradcheck_cli/``, the package itself
#: (``gradcheck_cli/__init__.py``, named "", whose names load on first use) among them.
LAYERS = (
    ("core", ("core.", "schemas.")),
    ("errors", ("errors.",)),
    ("engine", ("engine.",)),
    ("verdict", ("verdict.",)),
    ("advice", ("advice.",)),
    ("check", ("check.",)),
    ("taylor", ("taylor.",)),
    ("adapters", ("adapters.",)),
    ("public faces", ("", "problem", "testing", "torch", "jax")),
    ("display", ("display.",)),
    ("chapter", ("chapter.",)),
    ("cli", ("cli.",)),
    ("top", ("__main__",)),
)

#: Modules directly in gradcheck_cli/ at most: the public faces, the package and ``__main__``.
TOP_MODULES = 8

#: The imports that still run up a layer (none): each one named here is a debt, and the test fails
#: when one is paid without striking it out.
PENDING: set = set()

MODULE_LINES = 500
FUNCTION_LINES = 60


def _modules() -> dict:
    """Every module's dotted name (without ``gradcheck_cli.``; the root is "") → its file."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


MODULES = _modules()


def _trees() -> dict:
    return {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in MODULES.items()}


TREES = _trees()


def _package_of(name: str) -> list:
    """The package a module's relative imports start from, as name parts."""
    parts = name.split(".") if name else []
    return parts if MODULES[name].name == "__init__.py" else parts[:-1]


def _module_of(dotted: str) -> str | None:
    """The package's module that ``dotted`` (relative to the package) names, or the longest one it lies in."""
    while dotted not in MODULES and dotted:
        dotted = dotted.rpartition(".")[0]
    return dotted if dotted in MODULES else None


def imported(name: str) -> list:
    """(module imported, name imported or None, line) of every import of the package in ``name``, at any depth."""
    found = []
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "gradcheck_cli" or alias.name.startswith("gradcheck_cli."):
                    found.append((_module_of(alias.name.removeprefix("gradcheck_cli").lstrip(".")), None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = _package_of(name)
                base = package[: len(package) - node.level + 1] + ([node.module] if node.module else [])
            elif node.module == "gradcheck_cli" or (node.module or "").startswith("gradcheck_cli."):
                base = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:
                whole = ".".join([*base, alias.name])
                if whole in MODULES:  # from . import render: the module itself
                    found.append((whole, None, node.lineno))
                else:
                    found.append((_module_of(".".join(base)), alias.name, node.lineno))
    return found


def arrows() -> set:
    """(importer, imported) for every import between two of the package's modules."""
    return {(name, target) for name in MODULES for target, _, _ in imported(name) if target != name}


def _in(name: str, member: str) -> bool:
    """Whether module ``name`` is ``member``: that module, or a module of that sub-package ("check.")."""
    return name == member or (member.endswith(".") and (name == member[:-1] or name.startswith(member)))


def layer_of(name: str) -> int:
    for index, (_, members) in enumerate(LAYERS):
        if any(_in(name, member) for member in members):
            return index
    raise AssertionError(f"gradcheck_cli.{name} is in no layer: add it to one of LAYERS")


def test_every_module_is_in_one_layer():
    for name in MODULES:
        places = [label for label, members in LAYERS if any(_in(name, member) for member in members)]
        assert len(places) == 1, (name, places)


def test_no_module_imports_a_layer_above_its_own():
    found = upward(arrows())
    described = [
        f"{source} ({LAYERS[layer_of(source)][0]}) -> {target} ({LAYERS[layer_of(target)][0]})"
        for source, target in sorted(found - PENDING)
    ]
    assert not described, "imports that run up a layer:\n" + "\n".join(described)
    assert not PENDING - found, f"no longer upward, strike them from PENDING: {sorted(PENDING - found)}"


def loops(edges) -> list:
    """The import loops among ``edges`` ((importer, imported) pairs), each as the modules around it."""
    graph = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
    found, state = [], {}  # state: "open" while on the current path, "done" after

    def visit(name, path):
        state[name] = "open"
        for target in sorted(graph.get(name, ())):
            if state.get(target) == "open":
                found.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, [*path, target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


def test_no_modules_import_each_other_in_a_loop():
    found = loops(arrows())
    assert not found, "import loops: " + "; ".join(" -> ".join(loop) for loop in found)


def upward(edges) -> set:
    """The ``edges`` that import a layer above the importer's own."""
    return {(source, target) for source, target in edges if layer_of(target) > layer_of(source)}


def test_no_private_name_is_imported_from_another_module():
    private = [
        f"gradcheck_cli.{name}:{line} imports {symbol} from gradcheck_cli.{target}"
        for name in MODULES
        for target, symbol, line in imported(name)
        if symbol is not None and symbol.startswith("_") and not symbol.startswith("__") and target != name
    ]
    assert not private, "\n".join(private)


def test_the_package_root_holds_only_the_public_faces():
    top = sorted(name or "__init__" for name, path in MODULES.items() if path.parent == PACKAGE)
    assert len(top) <= TOP_MODULES, top
    folders = {path.relative_to(PACKAGE).parts[0] for path in MODULES.values() if path.parent != PACKAGE}
    assert {member.rstrip(".") for _, members in LAYERS for member in members if member.endswith(".")} == folders


def test_only_the_commands_import_the_chapter():
    importers = sorted(
        {source for source, target in arrows() if target.startswith("chapter") and not source.startswith("chapter")}
    )
    assert all(source.startswith("cli.commands.") for source in importers), importers


def test_no_module_is_over_500_lines():
    long = {
        name: lines
        for name, path in MODULES.items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert not long, long


def function_lines(node) -> int:
    """A function's lines from ``def`` to its end, minus its docstring's (its decorators not counted)."""
    lines = node.end_lineno - node.lineno + 1
    if ast.get_docstring(node, clean=False) is not None:
        lines -= node.body[0].end_lineno - node.body[0].lineno + 1
    return lines


def test_no_function_is_over_60_lines():
    long = [
        f"gradcheck_cli.{name}:{node.lineno} {node.name}: {function_lines(node)} lines"
        for name, tree in TREES.items()
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and function_lines(node) > FUNCTION_LINES
    ]
    assert not long, "\n".join(long)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ..errors import GradCheckError\n", [("errors", "GradCheckError")]),
        ("def f():\n    from ..display import render\n", [("display.render", None)]),
        ("import gradcheck_cli.engine.estimator as e\n", [("engine.estimator", None)]),
        ("from gradcheck_cli.check.plan import _validated\n", [("check.plan", "_validated")]),
        ("import os\nfrom numpy import ndarray\n", []),
    ],
)
def test_the_imports_are_read_at_any_depth_relative_or_absolute(source, expected, monkeypatch):
    monkeypatch.setitem(TREES, "core.record", ast.parse(source))
    assert [(target, symbol) for target, symbol, _ in imported("core.record")] == expected


def test_a_loop_and_an_upward_import_would_be_found(monkeypatch):
    source = "def f():\n    from ..errors import GradCheckError\n"
    monkeypatch.setitem(TREES, "core.record", ast.parse(source))
    assert ("core.record", "errors") in upward(arrows())  # errors are a layer above core
    assert any({"core.record", "errors.record"} <= set(loop) for loop in loops(arrows()))  # errors.record imports it
    assert loops({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c", "a"]]
