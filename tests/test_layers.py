"""The package's layers hold: no import cycle among its modules, and no import up a layer.

Every ``import`` and ``from ... import`` of the package's own modules is read with ``ast``, wherever it stands
(a function's lazy import, a ``TYPE_CHECKING`` block): a lazy import still ties the two modules together.
``docs/architecture.md`` draws the same layers.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "t2ireason"

#: bottom up; a module belongs to the first layer one of whose prefixes it starts with (a prefix is a module or a
#: package: "judges" is t2ireason.judges and everything in it). Each layer may import its own and those below.
LAYERS = [
    ("files, images and statistics",
     ["version", "files", "images", "stats", "stats_paired", "meta_eval", "results", "redaction", "progress",
      "console", "prompts", "hub_ids", "difficulty", "difficulty_models", "processes"]),
    ("transport, judges and generators", ["transport", "judges", "parsing", "generation"]),
    ("benchmarks and scoring",
     ["benchmarks", "releases", "data", "scoring", "alignment", "baselines", "metric", "evaluation_metrics", "rewards",
      "rewriting", "mt2ie",
      "t2ireason"]),
    ("runs and building", ["runs", "run_files", "run_evaluation", "protocol_record", "window", "build", "engine",
                           "error_types"]),
    ("reports, studies, exports, publishing", ["report", "study", "exports", "publish", "spaces", "sweep"]),
    ("the command line", ["cli", "commands", "demo", "testing", "testing_families", "testing_http", "__main__"]),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py") if "metrics" not in p.relative_to(PACKAGE).parts[:1]}


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` (at ``path``) imports, each as the module itself (a name imported
    from a package is its submodule when there is one)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("t2ireason") and target != name:
                out.add(target)
    return out


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def layer_of(name: str) -> int:
    short = name.removeprefix("t2ireason.") if name != "t2ireason" else "t2ireason"
    for level, (_, prefixes) in enumerate(LAYERS):
        if any(short == p or short.startswith(p + ".") for p in prefixes):
            return level
    raise AssertionError(f"{name} is in no layer: add it to LAYERS here and to docs/architecture.md")


def test_the_reader_sees_the_imports_it_should():
    graph = import_graph()
    assert "t2ireason.judges.base" in graph["t2ireason.judges.cache"]  # from .base import ...
    assert "t2ireason.judges" in graph["t2ireason.run_evaluation"]  # from .judges import load_judge (the package)
    assert "t2ireason.files" in graph["t2ireason.judges.spec"]  # a lazy import inside a method counts


def test_no_import_cycle():
    try:
        tuple(graphlib.TopologicalSorter(import_graph()).static_order())
    except graphlib.CycleError as e:
        pytest.fail("an import cycle: " + " imports ".join(reversed(e.args[1])))


def test_every_module_has_a_layer():
    for name in import_graph():
        layer_of(name)


def test_no_import_runs_up_a_layer():
    upward = [f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
              for a, targets in sorted(import_graph().items()) for b in sorted(targets) if layer_of(b) > layer_of(a)]
    assert not upward, "imports up a layer:\n" + "\n".join(upward)


def test_no_module_is_much_over_700_lines():
    long = {name: n for name, path in modules().items() if (n := len(path.read_text(encoding="utf-8").splitlines())) > 720}
    assert not long, long


def test_the_architecture_page_names_every_layer():
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for title, prefixes in LAYERS:
        assert title in text, title
        for prefix in prefixes:
            if prefix not in ("t2ireason", "version", "__main__"):
                assert prefix.replace(".", "/") in text, f"docs/architecture.md does not name {prefix}"
