"""Writes minilm_vectors.npz: all-MiniLM-L6-v2's vectors and token counts for the texts of
``tests/test_embeddings_onnx.py``, computed by the model's own runtime (sentence-transformers
on torch, the ``reference`` extra). The ONNX export is compared with them where that runtime is
not installed (``make install`` leaves torch out).

    pip install -e '.[reference]' && HF_HUB_OFFLINE=1 python tests/reference/make_minilm_vectors.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))


def main() -> None:
    import sentence_transformers
    import torch

    from ragkit.embeddings import MiniLMEmbedder
    from tests.test_embeddings_onnx import LONG_TEXT, TEXTS

    reference = MiniLMEmbedder(backend="reference", device="cpu")
    texts = [*TEXTS, LONG_TEXT]
    np.savez_compressed(HERE / "minilm_vectors.npz", texts=np.asarray(texts),
                        vectors=reference.encode_passages(texts, progress=False),
                        tokens=np.asarray([reference.count_tokens([t]) for t in texts]),
                        made_with=np.asarray(f"sentence-transformers {sentence_transformers.__version__}, "
                                             f"torch {torch.__version__}"))


if __name__ == "__main__":
    main()
