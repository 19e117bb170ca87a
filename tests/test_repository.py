"""The repository keeps its promises: layout, configuration, README commands."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jupyter_book
import yaml
from bookbuild import BUILD_FLAGS, ROOT, is_notebook, toc_files

# Subtrees of _config.yml whose keys jupyter-book passes on without checking.
FREE_FORM = {("sphinx", "config"), ("sphinx", "local_extensions"), ("latex", "latex_documents")}


def unknown_config_keys(config: dict, known: dict, path: tuple = ()) -> list[str]:
    """Keys of ``config`` that jupyter-book does not know.

    jupyter-book validates _config.yml against a JSON schema that allows
    additional properties, so a misspelt key (``execute_notebook``) is
    silently ignored.  ``known`` is a nested dict of the allowed keys.
    """
    unknown = []
    for key, value in config.items():
        here = (*path, key)
        if key not in known:
            unknown.append("/".join(here))
        elif isinstance(value, dict) and here not in FREE_FORM and isinstance(known[key], dict):
            unknown += unknown_config_keys(value, known[key], here)
    return unknown


def _merge(into: dict, more: dict) -> dict:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif key not in into or not isinstance(into[key], dict):
            into[key] = value if isinstance(value, dict) else None
    return into


def _schema_keys(schema: dict) -> dict:
    return {
        key: _schema_keys(sub) if "properties" in sub else None
        for key, sub in schema.get("properties", {}).items()
    }


def jb_known_keys() -> dict:
    """Every key jupyter-book reads: its schema plus its default_config.yml.

    The schema alone misses keys that jupyter-book uses (``only_build_toc_files``),
    so the two are merged.
    """
    package = Path(jupyter_book.__file__).parent
    schema = json.loads((package / "config_schema.json").read_text())
    defaults = yaml.safe_load((package / "default_config.yml").read_text())
    return _merge(_schema_keys(schema), defaults)


def test_config_has_only_known_keys():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert unknown_config_keys(config, jb_known_keys()) == []


def test_misspelt_config_key_is_caught():
    """The checker above bites: a typo in a nested key is reported."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebook"] = "off"  # missing final s
    config["bibtex_bibfile"] = []
    assert unknown_config_keys(config, jb_known_keys()) == ["execute/execute_notebook", "bibtex_bibfile"]


def test_config_forces_strict_execution():
    """Every build executes every chapter and stops on any error or stderr output."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    execute = config["execute"]
    assert execute["execute_notebooks"] == "force"
    assert execute["raise_on_error"] is True
    assert execute["allow_errors"] is False
    assert execute["stderr_output"] == "error"
    assert config["sphinx"]["recursive_update"] is True
    assert config["sphinx"]["config"]["nitpicky"] is True


def test_toc_lists_exactly_the_chapters():
    listed = set(toc_files())
    on_disk = {str(p.relative_to(ROOT).with_suffix("")) for p in (ROOT / "book").glob("*.md")}
    assert listed == on_disk, f"in toc only: {listed - on_disk}; on disk only: {on_disk - listed}"


def test_chapters_with_code_cells_are_notebooks():
    """A chapter with code cells but no jupytext header would not run at all."""
    for path in (ROOT / "book").glob("*.md"):
        if "{code-cell}" in path.read_text():
            assert is_notebook(path), f"{path.name} has code cells but no jupytext header"


def test_no_ipynb_in_git():
    tracked = subprocess.run(
        ["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert tracked == []


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in re.findall(r"```(?:bash|sh)\n(.*?)```", quick, re.S)]


def test_readme_has_two_commands():
    commands = _readme_commands()
    assert len(commands) == 2, commands
    build, test = commands
    assert "pip install -r requirements.txt" in build and "jupyter-book build ." in build
    assert all(flag in build.split() for flag in BUILD_FLAGS), (build, BUILD_FLAGS)
    assert "pip install -r requirements.txt" in test and "pytest" in test


def test_ci_runs_the_readme_test_command():
    _, test = _readme_commands()
    ci = (ROOT / ".ci" / "run").read_text()
    assert test in ci.splitlines(), f".ci/run does not run the README's test command: {test}"
    assert "set -euo pipefail" in ci


def test_requirements_are_pinned():
    lines = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    lines = [line for line in lines if line]
    assert "-e ." in lines
    for line in lines:
        if line != "-e .":
            assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[A-Za-z0-9_.+\-]+", line), f"not pinned: {line}"


def test_ruff_clean():
    ruff = Path(sys.executable).with_name("ruff")
    command = [str(ruff) if ruff.exists() else "ruff", "check", "."]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_chapter_code_fits_the_page():
    """Code lines longer than 79 characters scroll sideways on the rendered page."""
    long_lines = []
    for path in (ROOT / "book").glob("*.md"):
        inside = False
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if line.startswith("```{code-cell}"):
                inside = True
            elif line.startswith("```"):
                inside = False
            elif inside and len(line) > 79:
                long_lines.append(f"{path.name}:{number} ({len(line)} characters)")
    assert long_lines == []


#: The most lines of code one chapter cell may hold.  A cell holds one idea
#: (a computation, the checks of one claim, a figure, a table); the longest
#: ran to 178 lines before the chapters were split by idea.
MAX_CELL_LINES = 100


def test_chapter_cells_hold_one_idea():
    """No code cell of a chapter is longer than MAX_CELL_LINES lines (its tags not counted)."""
    long_cells = []
    for path in sorted((ROOT / "book").glob("*.md")):
        cells = re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```$", path.read_text(), re.S | re.M)
        for body in cells:
            lines = [line for line in body.splitlines() if not line.startswith(":")]
            if len(lines) > MAX_CELL_LINES:
                long_cells.append(f"{path.name}: a cell of {len(lines)} lines starting {lines[0]!r}")
    assert long_cells == []


def test_chapter_titles_have_no_tex():
    """Titles appear in the navigation of every page, including pages without MathJax."""
    for path in (ROOT / "book").glob("*.md"):
        title = next(line for line in path.read_text().splitlines() if line.startswith("# "))
        assert "$" not in title and "\\" not in title, f"{path.name}: {title}"


def test_glued_markdown_is_parsed_as_myst():
    """A ``{glue:md}`` role without ``:myst`` is parsed as CommonMark: its $math$ shows as dollars."""
    bare = [
        f"{path.name}: {role}"
        for path in sorted((ROOT / "book").glob("*.md"))
        for role in re.findall(r"\{glue:md\}`[^`]*`", path.read_text())
        if not role.endswith(":myst`")
    ]
    assert bare == [], bare


def test_parallel_build_starts_the_measured_heaviest_chapters_first(tmp_path):
    """The read's order: measured seconds where known (every key a chapter), source size else."""
    from types import SimpleNamespace

    from bookbuild import load_extension

    parallel = load_extension("parallel_chapters")
    record = json.loads(parallel.CHAPTER_SECONDS.read_text())
    assert {"command", "commit", "measured"} <= set(record), "the weights' provenance"
    seconds = record["seconds"]
    assert parallel._measured_seconds() == seconds
    assert set(seconds) <= {str(Path(f).with_suffix("")) for f in toc_files()}, "a weight of no chapter"
    for name in ("big", "small", "unmeasured"):
        (tmp_path / f"{name}.md").write_text("x" * {"big": 100, "small": 10, "unmeasured": 50_000}[name])
    handlers = {}
    app = SimpleNamespace(
        env=SimpleNamespace(doc2path=lambda doc: tmp_path / f"{doc}.md"),
        connect=lambda event, handler: handlers.setdefault(event, handler),
    )
    original = parallel._measured_seconds
    try:
        # the short text measured slow goes first; an unmeasured one by size (50 kB ~ 10 s)
        parallel._measured_seconds = lambda: {"small": 30.0, "big": 1.0}
        make_chunks = parallel._heaviest_first(app, parallel.sphinx_make_chunks)
        chunks = make_chunks(["big", "small", "unmeasured"], 1)
    finally:
        parallel._measured_seconds = original
    assert chunks[0] == ["small"] and sorted(c[0] for c in chunks) == ["big", "small", "unmeasured"]
    assert [c[0] for c in chunks[1:]] == ["big", "unmeasured"]  # waiting tasks start last-added first
    # once read (env-updated), the write takes Sphinx's own chunks: a few large ones, in order
    handlers["env-updated"](app, app.env)
    documents = [f"doc{k}" for k in range(28)]
    written = make_chunks(documents, 2)
    assert written == parallel.sphinx_make_chunks(documents, 2) and len(written) < len(documents) / 5


def test_numeric_references_unpickle_each_target_once():
    """The write's {numref} lookups load a target chapter's doctree once, and leave the env as it was."""
    from bookbuild import load_extension

    parallel = load_extension("parallel_chapters")
    loads = []

    class Env:
        def get_doctree(self, docname):
            loads.append(docname)
            return {"doc": docname}

    def resolve(domain, env, target):  # as Sphinx's: reads the target's doctree
        return env.get_doctree(target)["doc"]

    cached = parallel._numref_reads_each_target_once(resolve)
    env = Env()
    assert [cached(None, env, t) for t in ("a", "b", "a", "a")] == ["a", "b", "a", "a"]
    assert loads == ["a", "b"]
    assert "get_doctree" not in vars(env) and env.get_doctree("c") == {"doc": "c"}
