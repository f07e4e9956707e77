"""The map cannot drift: docs/ARCHITECTURE.md and each package's docstring name what exists.

Every package under tui/ and widgets/ has one line in ARCHITECTURE.md's "Packages" list,
and its `__init__.py` docstring lists its modules and subpackages one a line
(`name.py: what it holds`, `name/: ...`). The "Where does X live" section names a file
and a function for each behaviour a maintainer looks for; both must exist. No module is
over MAX_LINES lines unless "Modules over 400 lines" names it with a reason. Files are
parsed, never imported, so the check costs milliseconds.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPO / "docs" / "ARCHITECTURE.md"
ROOTS = ("tui", "widgets")
MAX_LINES = 400
ENTRY = re.compile(r"^([A-Za-z_]\w*\.py|[A-Za-z_]\w*/): \S")
MAP_LINE = re.compile(r"^- `([\w/]+/)`: \S")
NAMED = re.compile(r"`([\w/]+\.py)`(?: `([\w.]+)`)?")
BEHAVIOURS = (
    "The ETA",
    "Secret redaction",
    "A kill's re-check",
    "Alert evaluation",
    "A fleet row",
    "SSH reconnect backoff",
    "A key binding",
    "The capacity search's next level",
    "The recorder's write path",
    "The load explainer's verdict",
    "The exporter's metrics",
    "The browser's token check",
    "XID decoding",
    "The probe's refusal",
    "The summary's deployment attempts",
)


def _packages() -> list[Path]:
    found = []
    for root in ROOTS:
        found += [init.parent for init in (REPO / root).rglob("__init__.py")]
    return sorted(found)


def _section(title: str) -> list[str]:
    """The lines of one `## title` section of ARCHITECTURE.md."""
    lines = ARCHITECTURE.read_text().splitlines()
    start = lines.index(f"## {title}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1 : end]


def _listed(package: Path) -> list[str]:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    return [m.group(1) for line in doc.splitlines() if (m := ENTRY.match(line))]


def _children(package: Path) -> set[str]:
    names = set()
    for path in package.iterdir():
        if path.suffix == ".py" and path.name != "__init__.py":
            names.add(path.name)
        elif path.is_dir() and (path / "__init__.py").exists():
            names.add(f"{path.name}/")
    return names


def _defined(path: Path, qualname: str) -> bool:
    """Whether `qualname` (a function, class, Class.method or module-level name) is in the file."""
    scope: list[ast.stmt] = ast.parse(path.read_text()).body
    for part in qualname.split("."):
        found = None
        for node in scope:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if node.name == part:
                    found = node
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == part for t in targets):
                    found = node
        if found is None:
            return False
        scope = found.body if isinstance(found, ast.ClassDef) else []
    return True


def test_every_package_lists_each_of_its_modules_once() -> None:
    problems = []
    for package in _packages():
        where = package.relative_to(REPO)
        listed = _listed(package)
        actual = _children(package)
        for name in sorted(actual - set(listed)):
            problems.append(f"{where}/__init__.py: add a line `{name}: what it holds`")
        for name in sorted(set(listed) - actual):
            problems.append(f"{where}/__init__.py: lists {name}, which does not exist")
        doubled = sorted({name for name in listed if listed.count(name) > 1})
        problems += [f"{where}/__init__.py: lists {name} twice" for name in doubled]
    assert not problems, "\n".join(problems)


def test_the_map_names_every_package_and_nothing_else() -> None:
    mapped = [m.group(1) for line in _section("Packages") if (m := MAP_LINE.match(line))]
    actual = {f"{package.relative_to(REPO).as_posix()}/" for package in _packages()}
    problems = [f"docs/ARCHITECTURE.md, Packages: add `{p}`" for p in sorted(actual - set(mapped))]
    problems += [
        f"docs/ARCHITECTURE.md, Packages: `{p}` is not a package" for p in set(mapped) - actual
    ]
    assert not problems, "\n".join(problems)


def test_where_does_x_live_names_files_and_functions_that_exist() -> None:
    lines = [line for line in _section("Where does X live") if line.startswith("- ")]
    topics = [line[2:].split(": ", 1)[0] for line in lines]
    assert sorted(topics) == sorted(BEHAVIOURS), "one line per behaviour, in the same words"
    problems = []
    for line in lines:
        named = NAMED.findall(line)
        assert named and named[0][1], f"names no file and function: {line}"
        for file, qualname in named:
            path = REPO / file
            if not path.is_file():
                problems.append(f"{line[2:].split(':')[0]}: {file} does not exist")
            elif qualname and not _defined(path, qualname):
                problems.append(f"{line[2:].split(':')[0]}: {file} defines no {qualname}")
    assert not problems, "\n".join(problems)


def _line_count(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_is_over_the_limit_unless_named_with_a_reason() -> None:
    named: dict[str, str] = {}
    for line in _section(f"Modules over {MAX_LINES} lines"):
        if m := re.match(r"^- `([\w/]+\.py)`: (\S.*)$", line):
            named[m.group(1)] = m.group(2)
    over = {
        path.relative_to(REPO).as_posix(): _line_count(path)
        for root in ROOTS
        for path in (REPO / root).rglob("*.py")
        if _line_count(path) > MAX_LINES
    }
    problems = [
        f"{path}: {lines} lines; split it, or name it with a reason in docs/ARCHITECTURE.md"
        for path, lines in sorted(over.items())
        if path not in named
    ]
    problems += [
        f"docs/ARCHITECTURE.md names {path}, which is not over {MAX_LINES} lines: drop it"
        for path in sorted(set(named) - set(over))
    ]
    assert not problems, "\n".join(problems)


def test_the_checks_catch_a_drift() -> None:
    """The parsers find what a drift would change: an entry, a map line, a function."""
    assert ENTRY.match("search.py: the search") and ENTRY.match("unit/: the unit")
    assert not ENTRY.match("The search: see search.py")
    assert MAP_LINE.match("- `tui/bench/capacity/`: the capacity search")
    assert _defined(REPO / "tui/bench/capacity/search.py", "CapacitySearch.next_concurrency")
    assert not _defined(REPO / "tui/bench/capacity/search.py", "CapacitySearch.no_such_method")
    assert _defined(REPO / "tui/core/keymap.py", "COMMANDS")
