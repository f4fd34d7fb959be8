"""The documentation says what the code does: the README's examples run and print what it
shows (``tools/docs_check.py``), the README stays short, and no page or notebook names
design notes by number or changes by issue letter."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import docs_check  # noqa: E402

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOURCES = sorted((ROOT / "ragkit").rglob("*.py"))
HISTORY_WORDS = re.compile(r"seed 0\d\d|\bthe seeds?\b(?!\s*\d)|\bissue [A-Z]\b", re.IGNORECASE)


def test_readme_is_at_most_250_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"


@pytest.mark.parametrize("path", PAGES + NOTEBOOKS + SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_design_note_numbers_or_issue_letters(path):
    found = [(n, m.group(0)) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for m in HISTORY_WORDS.finditer(line)]
    assert not found, f"{path.name} names designs by number or changes by issue letter: {found}"


def test_readme_has_no_changelog_words():
    text = README.read_text(encoding="utf-8")
    assert not re.search(r"\bseeds?\b|\bissues?\b", text, re.IGNORECASE)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shell_example_is_run_or_listed(path):
    """No ```sh blocks, no untested command in a table, no output outside a command."""
    page = docs_check.parse(path)
    assert not page.problems


def test_the_readme_runs_an_example_of_every_pipeline():
    commands = [c.one_line for c in docs_check.parse(README).commands if c.run]
    for name in ("lexical", "spec", "causal", "graph", "kg"):
        assert any(f"--pipeline {name} " in c for c in commands), name


def test_masking_hides_only_what_varies():
    shown = ("indexed 24 chunks (1623 terms) into outputs/index/manuals in 0.0116 s\n"
             "timings (ms): {'retrieval': 0.431, 'total': 209.165}\n"
             '{"qps": 2764.53, "index_s": 1.38, "ndcg@10": 0.69288}\n'
             "04.ipynb: ok in 21.4 s: outputs/runs/04_query_and_explain/20261123T003927786164Z/04.ipynb\n")
    printed = ("indexed 24 chunks (1623 terms) into outputs/index/manuals in 0.0062 s\n"
               "timings (ms): {'retrieval': 0.376, 'total': 179.012}\n"
               '{"qps": 2154.65, "index_s": 2.0, "ndcg@10": 0.69288}\n'
               "04.ipynb: ok in 9.0 s: outputs/runs/04_query_and_explain/20261124T101010101010Z/04.ipynb\n")
    assert docs_check.sanitize(shown) == docs_check.sanitize(printed)
    assert docs_check.sanitize('{"ndcg@10": 0.69288}') != docs_check.sanitize('{"ndcg@10": 0.7}')
    assert docs_check.sanitize("indexed 24 chunks") != docs_check.sanitize("indexed 25 chunks")


def test_a_page_whose_output_changed_fails_and_update_rewrites_it(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Intro.\n\n```console\n$ echo one; echo two\none\n3\n\n$ printf 'x\\n' >&2\nx\n```\n\n"
                    "```bash\nmake serve\n```\n", encoding="utf-8")
    run = [sys.executable, str(ROOT / "tools" / "docs_check.py"), str(page)]
    first = subprocess.run(run, capture_output=True, text=True)
    assert first.returncode == 1, first.stdout
    assert "listed, not run: make serve" in first.stdout
    assert "1 printed something else than shown" in first.stdout
    updated = subprocess.run(run + ["--update"], capture_output=True, text=True)
    assert updated.returncode == 0, updated.stdout
    assert page.read_text(encoding="utf-8") == ("Intro.\n\n```console\n$ echo one; echo two\none\ntwo\n\n"
                                                "$ printf 'x\\n' >&2\nx\n```\n\n```bash\nmake serve\n```\n")
    assert subprocess.run(run, capture_output=True, text=True).returncode == 0


@pytest.mark.slow
def test_readme_examples_print_what_the_readme_shows():
    """Every ```console command of the README, run in a fresh copy of the repository
    (``make docs-check`` does the same for docs/)."""
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_check.py"), str(README)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


@pytest.mark.slow
def test_the_docs_site_builds_strict_with_every_page_and_every_exported_name(tmp_path):
    """``make docs``: MkDocs builds docs/ with ``--strict`` (a broken link, a missing anchor or
    a reference to a name that does not exist fails it); every page is in the navigation, and
    the API reference has an entry for every name of ``ragkit.__all__``."""
    import os

    import yaml

    import ragkit

    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]

    def pages(nav):
        for entry in nav:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            yield from (pages(value) if isinstance(value, list) else [value])

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)   # its !!python tag unread
    assert sorted(pages(config["nav"])) == sorted(p.relative_to(ROOT / "docs").as_posix()
                                                  for p in (ROOT / "docs").rglob("*.md"))
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    exported = [name for name in ragkit.__all__ if name != "__version__"]
    missing = [name for name in exported if f'id="ragkit.{ragkit._EXPORTS[name]}.{name}"' not in reference]
    assert not missing, missing
    import html

    first_line = ragkit.BM25Index.__doc__.strip().splitlines()[0]
    assert first_line in html.unescape(re.sub(r"<[^>]+>", "", reference))   # the docstring, read from the code
