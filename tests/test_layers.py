"""The package's layers (pyproject.toml's import-linter contract) hold, and the check can fail.

``attnscale.practice`` (advice, calculator, length rules) above ``models``
(the trained models) above ``theory`` (the sources' mathematics) above
``support`` (validation, checks, intervals, tables, figures).  Each test
runs on the source tree in a subprocess, so that a planted import in a
copy is what the checker sees.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("practice", "models", "theory", "support")

# Modules that import the package's front door (attnscale/__init__.py), found by grimp.
_ROOT_IMPORTERS = """
import grimp
graph = grimp.build_graph("attnscale")
front = [m for m in graph.modules if m != "attnscale"
         and graph.direct_import_exists(importer=m, imported="attnscale")]
print("\\n".join(sorted(front)))
"""


def _run(src: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _lint(src: Path) -> subprocess.CompletedProcess:
    return _run(
        src,
        sys.executable,
        "-c",
        "from importlinter.cli import lint_imports_command; lint_imports_command()",
        "--config",
        str(ROOT / "pyproject.toml"),
        "--no-cache",
    )


def _root_importers(src: Path) -> list[str]:
    result = _run(src, sys.executable, "-c", _ROOT_IMPORTERS)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A copy of the package with one upward import and one import of the front door."""
    src = tmp_path_factory.mktemp("planted")
    shutil.copytree(
        ROOT / "src" / "attnscale", src / "attnscale", ignore=shutil.ignore_patterns("__pycache__")
    )
    softmax = src / "attnscale" / "theory" / "softmax.py"
    softmax.write_text(
        softmax.read_text() + "\nfrom ..practice import advice  # planted: theory -> practice\n"
    )
    rules = src / "attnscale" / "practice" / "reported.py"
    rules.write_text(rules.read_text() + "\nfrom .. import recommend_scale  # planted: the front door\n")
    return src


def test_every_module_sits_in_a_layer():
    package = ROOT / "src" / "attnscale"
    loose = sorted(
        p.name for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py", "_version.py")
    )
    assert loose == [], f"modules outside the four layers {LAYERS}: {loose}"
    assert sorted(p.name for p in package.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(
        LAYERS
    )


def test_the_layers_contract_is_kept():
    result = _lint(ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_the_contract_fails_on_a_planted_upward_import(planted):
    result = _lint(planted)
    assert result.returncode != 0
    assert "attnscale.theory.softmax -> attnscale.practice.advice" in result.stdout


def test_no_module_imports_the_front_door():
    assert _root_importers(ROOT / "src") == []


def test_the_front_door_check_fails_on_a_planted_import(planted):
    assert _root_importers(planted) == ["attnscale.practice.reported"]
