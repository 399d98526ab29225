"""The layout holds: the import contracts in pyproject.toml (lint-imports), ruff's rules, and the
page folder Streamlit needs (subfolders only)."""

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(tool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / tool), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_import_contracts_are_kept():
    done = run("lint-imports", "--no-cache")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_ruff_is_clean():
    done = run("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_page_scripts_live_only_in_subfolders_of_pages():
    """A `.py` directly in pages/ would be a legacy Streamlit page that a deep link runs without
    app.py (see app.py's docstring)."""
    assert not list((ROOT / "pages").glob("*.py"))
    assert len(list((ROOT / "pages").glob("*/*.py"))) >= 9


def test_the_ui_modules_documented_as_pure_are_the_ones_the_contract_keeps_pure():
    """A ui module whose docstring says "(no Streamlit)" is in pyproject.toml's contract that
    forbids it Streamlit, and only those: a new pure module gets the contract's check."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    pure = next(c for c in contracts["contracts"] if c["name"].startswith("ui's pure modules"))
    documented = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "ui").rglob("*.py")
                  if "(no Streamlit)" in " ".join((ast.get_docstring(ast.parse(p.read_text()))
                                                  or "").split())}
    assert set(pure["source_modules"]) == documented
    assert pure["forbidden_modules"] == ["streamlit"]


def test_no_test_imports_another_test_module_or_the_benchmarks():
    for path in (ROOT / "tests").rglob("*.py"):
        if path == Path(__file__).resolve():
            continue
        text = path.read_text()
        assert "from benchmarks" not in text and "import benchmarks" not in text, path
        assert not any(line.startswith(("from tests.", "import tests.")) and ".test_" in line
                       for line in text.splitlines()), path


def test_nothing_outside_tests_imports_tests():
    """The product, the benchmarks, the docs' scripts and the harness stand without tests/: what
    they share with the tests lives in harness/ or in the package that owns it. Read as text, so
    an import inside a script a benchmark hands to a child process counts too."""
    imports_tests = re.compile(r"^\s*(from|import)\s+tests\b", re.M)
    tops = [p for p in ROOT.iterdir()
            if not p.name.startswith(".") and p.name not in {"tests", "mutants"} and not p.is_symlink()]
    scripts = [p for top in tops for p in ([top] if top.is_file() else top.rglob("*.py"))
               if p.suffix == ".py"]
    assert ROOT / "app.py" in scripts and ROOT / "benchmarks" / "work_bench.py" in scripts
    assert [p.relative_to(ROOT) for p in scripts if imports_tests.search(p.read_text())] == []


def test_the_mutation_tests_name_files_that_exist():
    """[tool.mutmut] lists the files it mutates and the tests it runs by path: a moved test file
    would leave `make mutants` running none of them."""
    section = (ROOT / "pyproject.toml").read_text().split("[tool.mutmut]", 1)[1].split("\n[", 1)[0]
    named = re.findall(r'"((?:sim|tests)/[^"]+)"', section)
    assert any(p.startswith("tests/") for p in named) and any(p.startswith("sim/") for p in named)
    assert [p for p in named if not (ROOT / p).exists()] == []


def test_no_merge_conflict_markers_in_tracked_files():
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode:
        return   # not a git checkout (an unpacked archive): nothing to compare against
    markers = re.compile(r"^(<{7} |>{7} |={7}$)", re.M)
    for name in listed.stdout.splitlines():
        path = ROOT / name
        if path.suffix in {".png", ".gif", ".csv"} or not path.is_file():
            continue
        assert not markers.search(path.read_text(errors="replace")), name


def test_pages_draw_charts_only_through_the_shared_helper():
    """ui.shell.widgets.chart draws every chart the same way (ui/shell/chart_view.py: Vega on a canvas, a
    transparent background in the dark theme; downloads, its numbers as tables); a page that
    called Streamlit's chart functions itself drew an SVG on an opaque box with none of them."""
    direct = re.compile(r"\bst\.(vega_lite_chart|altair_chart|plotly_chart|pyplot)\(")
    scripts = [ROOT / "app.py", *(ROOT / "pages").rglob("*.py"), *(ROOT / "ui").rglob("*.py")]
    offenders = [p.relative_to(ROOT) for p in scripts
                 if p.name != "chart_view.py" and direct.search(p.read_text())]
    assert offenders == []
