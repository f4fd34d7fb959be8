"""The library surface: ``from ragkit import ...``, the examples of docs/api.md (run as
doctests), answers as Markdown in Jupyter, and progress bars on for a person and off for
papermill/nbval."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ragkit
from ragkit.config import Settings
from ragkit.pipelines.base import Answer, Citation
from ragkit.runtime.progress import show_progress

ROOT = Path(__file__).resolve().parents[1]


def test_docs_api_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGKIT_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    result = doctest.testfile(str(ROOT / "docs" / "api.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted >= 25 and result.failed == 0


def test_every_exported_name_resolves_and_is_documented():
    documented = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    for name in ragkit.__all__:
        assert getattr(ragkit, name) is not None
        if name != "__version__":
            assert f"`{name}`" in documented, f"{name} is exported but docs/api.md does not name it"
    assert sorted(dir(ragkit)) == sorted(ragkit.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        ragkit.nothing_here  # noqa: B018


def test_import_ragkit_loads_nothing_heavy():
    code = ("import sys, ragkit; from ragkit import BM25Index, ask; "
            "print(sorted(m for m in ('torch', 'pandas', 'chromadb', 'llama_cpp', 'fastapi', "
            "'sentence_transformers', 'neo4j', 'tqdm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_the_version_is_read_on_first_use():
    """``import ragkit`` leaves importlib.metadata unloaded (it costs more than the rest of the
    import); ``ragkit.__version__`` reads it then."""
    code = ("import sys, ragkit; before = 'importlib.metadata' in sys.modules; "
            "from importlib import metadata; "
            "print(before, ragkit.__version__ == metadata.version('ragkit-workbench'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["False", "True"]


def _answer(question: str, pipeline: str = "lexical") -> Answer:
    return Answer(question=question, pipeline=pipeline, answer="Line one [1]\nline two",
                  citations=[Citation(id=1, doc_id="d#1", title="A title", source="S")])


def test_answer_markdown_labels_follow_the_question():
    english = _answer("What is checked first?")._repr_markdown_()
    assert english.startswith("**Question:** What is checked first?")
    assert "Line one [1]  \nline two" in english and "- [1] `d#1` — A title" in english
    assert "*Answer from:* evidence" in english
    vietnamese = _answer("Kiểm tra gì trước?")._repr_markdown_()
    assert vietnamese.startswith("**Câu hỏi:**") and "**Nguồn:**" in vietnamese
    graph = _answer("Who?", "graph").to_markdown()
    assert "- [1] A title — S" in graph
    empty = Answer(question="Why?", pipeline="lexical", answer="No.").to_markdown()
    assert "- (none)" in empty


def test_progress_choice_without_a_kernel():
    assert show_progress(True) is True and show_progress(False) is False
    assert show_progress(None, Settings(progress=True)) is True
    assert show_progress(None, Settings(progress=False)) is False
    assert show_progress(None, Settings(ci=True)) is False
    # pytest captures stderr: no terminal, no bars
    assert show_progress(None, Settings()) is False
    assert Settings.from_env({"RAGKIT_PROGRESS": "0", "CI": "true"}) == Settings(progress=False, ci=True)
    assert Settings.from_env({"CI": "false"}).ci is False
    with pytest.raises(ragkit.InputError, match="RAGKIT_PROGRESS: expected 1 or 0, got 'maybe'"):
        Settings.from_env({"RAGKIT_PROGRESS": "maybe"})


def test_progress_in_a_real_kernel_follows_allow_stdin():
    """A real ipykernel: a cell sent the way JupyterLab sends it (allow_stdin) gets bars,
    one sent the way papermill/nbclient and nbval send it does not."""
    from jupyter_client.manager import start_new_kernel

    env = {k: v for k, v in os.environ.items() if k not in ("CI", "RAGKIT_PROGRESS")}
    env["PYTHONPATH"] = str(ROOT)
    km, kc = start_new_kernel(kernel_name="python3", env=env)
    try:
        def shown(allow_stdin: bool) -> str:
            out: list[str] = []

            def hook(msg):
                if msg["msg_type"] == "stream":
                    out.append(msg["content"]["text"])

            reply = kc.execute_interactive("from ragkit.runtime.progress import show_progress; print(show_progress())",
                                           allow_stdin=allow_stdin, output_hook=hook, timeout=120,
                                           stdin_hook=lambda msg: None)
            assert reply["content"]["status"] == "ok", reply["content"]
            return "".join(out).strip()

        assert shown(allow_stdin=True) == "True"
        assert shown(allow_stdin=False) == "False"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_pipeline_functions_take_a_path_and_traces_read_as_attributes(tmp_path):
    from ragkit import ask_kg, import_kg, open_typed_store

    path = tmp_path / "biomed.json.gz"
    import_kg(ROOT / "data" / "biomed" / "nodes.csv", ROOT / "data" / "biomed" / "edges.csv",
              open_typed_store(str(path)))
    answer = ask_kg("Which compounds treat asthma?", path, use_llm=False)      # a Path, as docs/api.md says
    assert answer.pipeline == "kg" and answer.citations
    trace = answer.trace
    assert trace.answer_source == trace["answer_source"] == "evidence"
    assert trace.short_answer == trace["short_answer"] and trace.model_answer is None
    assert trace.generation == {} and trace.fallback_reason == ""


def test_type_checkers_see_every_exported_name():
    """``from ragkit import X`` is typed: the TYPE_CHECKING block imports every exported name
    from the module that defines it, under its own name ("X as X": an explicit re-export)."""
    import ast

    tree = ast.parse((ROOT / "ragkit" / "__init__.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    seen = {alias.name: (node.module, alias.asname) for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}
    assert set(seen) == set(ragkit._EXPORTS)
    assert all(seen[name] == (module, name) for name, module in ragkit._EXPORTS.items())


def documented_examples() -> list[str]:
    """docs/api.md's examples as a user's script: the doctest lines in order."""
    lines = []
    for line in (ROOT / "docs" / "api.md").read_text(encoding="utf-8").splitlines():
        if line.startswith((">>> ", "... ")):
            lines.append(line[4:])
        elif line in (">>>", "..."):
            lines.append("")
    return lines


@pytest.fixture(scope="module")
def strict_mypy(tmp_path_factory) -> subprocess.CompletedProcess:
    """mypy --strict over two users' scripts at once (``user.py`` reveals the library
    functions' types, ``examples.py`` is docs/api.md's examples), ragkit read as an installed
    package is (its own errors are not the user's). One run: the package's types are read
    once for both."""
    folder = tmp_path_factory.mktemp("strict-mypy")
    (folder / "user.py").write_text("import ragkit\nfrom ragkit import Answer, ask_kg\n\n"
                                    "answer: Answer = ragkit.ask('Máy tiện?', index='manuals-index', no_llm=True)\n"
                                    "short: str | None = answer.trace.short_answer\n"
                                    "reveal_type(ragkit.ask)\nreveal_type(ask_kg)\n", encoding="utf-8")
    (folder / "examples.py").write_text("\n".join(documented_examples()) + "\n", encoding="utf-8")
    config = folder / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n\n[mypy-ragkit.*]\nfollow_imports = silent\n", encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir",
                           str(folder / "cache"), "user.py", "examples.py"], capture_output=True, text=True,
                          cwd=folder, env={**os.environ, "MYPYPATH": str(ROOT)})


def lines_of(run: subprocess.CompletedProcess, script: str) -> list[str]:
    return [line for line in run.stdout.splitlines() if line.startswith(f"{script}:")]


@pytest.mark.slow
@pytest.mark.xdist_group("strict-mypy")
def test_mypy_reads_the_library_functions_types(strict_mypy):
    user = lines_of(strict_mypy, "user.py")
    revealed = [line.split("Revealed type is ", 1)[1] for line in user if "Revealed type" in line]
    assert len(revealed) == 2 and all(r.startswith('"def (question: str') for r in revealed), strict_mypy.stdout
    assert revealed[0].endswith('-> ragkit.pipelines.base.Answer"'), revealed[0]
    assert not [line for line in user if "error" in line.replace("Revealed", "")], strict_mypy.stdout


@pytest.mark.slow
@pytest.mark.xdist_group("strict-mypy")
def test_the_documented_examples_type_check_strictly(strict_mypy):
    """docs/api.md's examples, as a user's script (the doctest lines in order), pass mypy
    --strict against the package's types."""
    assert len(documented_examples()) > 40
    assert lines_of(strict_mypy, "examples.py") == [], strict_mypy.stdout
    # the run's only findings are the user script's two revealed types (notes, not errors)
    assert strict_mypy.returncode == 0 and "Success: no issues found in 2 source files" in strict_mypy.stdout, \
        strict_mypy.stdout + strict_mypy.stderr
