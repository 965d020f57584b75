"""The gateway's modules import each other one way: no cycle, and nothing imports the app
factory (routes reach the services through Flask's application context)."""

from __future__ import annotations

import ast
from pathlib import Path

GATEWAY = Path(__file__).resolve().parents[2] / "gateway"


def module_name(path: Path) -> str:
    parts = path.relative_to(GATEWAY.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def gateway_imports() -> dict[str, set[str]]:
    """module -> the gateway modules it imports, anywhere in its source."""
    modules = {module_name(p): p for p in GATEWAY.rglob("*.py") if p.name != "gunicorn.conf.py"}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            found |= {t for t in targets if t in modules and t != name}
        graph[name] = found - {"gateway"}  # the package's own __init__ imports nothing
    return graph


def test_no_module_of_the_gateway_imports_another_that_imports_it_back():
    graph = gateway_imports()
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module in done:
            return
        for imported in sorted(graph[module]):
            visit(imported, (*path, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())


def test_only_the_server_imports_the_app_factory():
    importers = [m for m, imports in gateway_imports().items() if "gateway.app" in imports]
    assert importers == []
