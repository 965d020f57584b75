"""The layering, stated so it stays true (DESIGN.md, the top-level table; docs/ARCHITECTURE.md):

- the animation library imports no server, network or torch, and nothing of the gateway,
  the model side or the tests;
- runtime code imports no tool: not the gateway's or the library's `tools/` (benchmarks, the
  load test, make run's supervisor), not the model side's training, never the tests;
- the gateway talks to TorchServe over HTTP only: it imports neither torch nor `torchserve`;
- the served model code imports nothing of the gateway or of training;
- no import cycle among the project's modules, and only the server imports the app factory;
- a render worker process loads no HTTP code (its tasks speak the library's errors);
- the gateway's top level stays small (rooms below it), the library's holds library modules.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("animation", "gateway", "torchserve")
TOOLS = ("animation.tools", "gateway.tools", "torchserve.training", "torchserve.bench")
SERVERS_AND_NETWORK = {"flask", "werkzeug", "gunicorn", "gevent", "requests", "boto3",
                       "botocore", "prometheus_client", "urllib3", "socket", "http", "ssl"}  # fmt: skip
TORCH = {"torch", "torchvision", "ts", "torchserve"}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            if path.name != "gunicorn.conf.py" and "__pycache__" not in path.parts:
                found[module_name(path)] = path
    return found


def _run_time_nodes(tree: ast.AST):
    """Every node of `tree` but those under `if TYPE_CHECKING:` (never run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            yield from (n for child in node.orelse for n in [child, *_run_time_nodes(child)])
            continue
        yield node
        yield from _run_time_nodes(node)


def imports_of(path: Path, name: str) -> set[str]:
    """Every module `path` imports when it runs, anywhere in its source (in a function too;
    relative imports resolved; not what only a type checker reads)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _run_time_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


MODULES = project_modules()
IMPORTS = {name: imports_of(path, name) for name, path in MODULES.items()}


def within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def offenders(importers, forbidden) -> dict[str, list[str]]:
    return {m: sorted(i for i in IMPORTS[m] if within(i, forbidden))
            for m in importers if any(within(i, forbidden) for i in IMPORTS[m])}  # fmt: skip


def runtime(package: str) -> list[str]:
    return [m for m in MODULES if within(m, [package]) and not within(m, TOOLS)]


def test_the_library_imports_no_server_network_or_torch_and_nothing_of_the_others():
    assert runtime("animation")
    forbidden = SERVERS_AND_NETWORK | TORCH | {"gateway", "tests", "animation.tools"}
    assert offenders(runtime("animation"), forbidden) == {}


def test_runtime_code_imports_no_tool_and_the_gateway_no_torch():
    assert offenders(runtime("gateway"), {*TOOLS, "tests", *TORCH}) == {}
    served = runtime("torchserve")
    assert "torchserve.handlers.base" in served and "torchserve.training.loop" not in served
    assert offenders(served, {*TOOLS, "tests", "gateway"}) == {}


def test_nothing_but_tools_and_tests_imports_a_tool():
    importers = [m for m in MODULES if not within(m, TOOLS)]
    assert offenders(importers, {"gateway.tools", "animation.tools"}) == {}


def test_no_import_cycle():
    graph = {m: {i for i in IMPORTS[m] if i in MODULES and i != m} for m in MODULES}
    # A package's __init__ is not a dependency of what it contains.
    graph = {m: {i for i in deps if not m.startswith(i + ".")} for m, deps in graph.items()}
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
    importers = [m for m, imports in IMPORTS.items() if "gateway.app" in imports]
    assert importers == []


def test_a_render_worker_process_loads_no_http_code():
    # What `python -m gateway.rendering.pool_worker` imports, and the tasks it is sent.
    code = (
        "import sys, gateway.rendering.pool_worker, gateway.rendering.tasks\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('flask', 'werkzeug', 'gevent',"
        " 'requests', 'boto3') or m.startswith(('gateway.web', 'gateway.errors'))]\n"
        "print(sorted(loaded))"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_the_gateway_top_level_is_small_and_the_library_top_level_is_library():
    top = sorted(p.name for p in (REPO / "gateway").glob("*.py"))
    assert len(top) <= 12, top
    rooms = {p.name for p in (REPO / "gateway").iterdir() if (p / "__init__.py").is_file()}
    assert {"web", "rendering", "backends", "ops", "tools"} <= rooms
    library = [p.stem for p in (REPO / "animation").glob("*.py")]
    assert not [m for m in library if "bench" in m or "eval" in m or m.startswith("test")]
    assert not [m for m in library if m in ("testchar", "quality", "segment_eval")]
