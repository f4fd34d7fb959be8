"""The same generation tests against both LLM backends: the default GGUF in process, and the
same GGUF behind a real OpenAI-compatible server (``python -m llama_cpp.server`` on
127.0.0.1, started here and stopped after)."""

import json
import re
import subprocess
import sys

import pytest

from ragkit.config import LLMConfig
from ragkit.errors import ModelError
from ragkit.testing.launch import free_port, llama_server_command, running_http
from ragkit.llm.backends import default_llm
from ragkit.llm.base import LLM, TokenTap
from ragkit.llm.remote import ServerLLM

from .conftest import ROOT

pytestmark = pytest.mark.slow

# The pipelines' prompts sized for a smaller window than the model's, and a shorter answer:
# what these tests check is that each pipeline runs on both backends, not how much it writes.
SMALL_WINDOW = LLMConfig(n_ctx=1024, max_tokens=128)
MESSAGES = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
PLAIN_TEXTS = ["Hello world", "Aspirin treats fever and mild pain.",
               "Máy khoan phải được tắt trước khi thay mũi khoan.", "SCP: Service Communication Proxy"]


@pytest.fixture(scope="module")
def llm_server_url():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with running_http(llama_server_command(port), f"{url}/v1/models", timeout=120):
        yield url


@pytest.fixture(scope="module")
def server_llm(llm_server_url):
    # The server's answers are checked here, not its speed: a loaded CI machine may take
    # longer than the default 120 s for a 320-token answer of the 1.5B.
    model = ServerLLM(LLMConfig(server_url=llm_server_url, server_timeout=900))
    yield model
    model.close()


@pytest.fixture(params=["gguf", "server"])
def backend(request, gguf):
    return gguf if request.param == "gguf" else request.getfixturevalue("server_llm")


def test_both_backends_implement_the_interface(backend):
    assert isinstance(backend, LLM)
    assert backend.name.endswith(".gguf")
    assert backend.n_ctx == 2048


def test_generation_is_deterministic(backend):
    first = backend.chat(MESSAGES, max_tokens=40)
    again = backend.chat(MESSAGES, max_tokens=40)
    assert "Paris" in first.text
    assert first.text == again.text
    assert first.finish_reason in ("stop", "length")
    assert first.completion_tokens > 0


def test_streaming_gives_the_same_text_piece_by_piece(backend):
    whole = backend.chat(MESSAGES, max_tokens=40)
    pieces: list[str] = []
    streamed = backend.chat(MESSAGES, max_tokens=40, on_token=pieces.append)
    assert len(pieces) > 3
    assert "".join(pieces) == streamed.text == whole.text


def test_stop_sequences_end_the_answer(backend):
    messages = [{"role": "user", "content": "Count from 1 to 10, separated by commas."}]
    free = backend.chat(messages, max_tokens=60)
    stopped = backend.chat(messages, max_tokens=60, stop=["5"])
    assert "5" in free.text
    assert "5" not in stopped.text
    assert free.text.startswith(stopped.text.rstrip())


def test_max_tokens_bounds_the_answer(backend):
    out = backend.chat([{"role": "user", "content": "Write a long story about a dragon."}], max_tokens=8)
    assert out.finish_reason == "length"
    assert 0 < backend.count_tokens(out.text) <= 9


def test_a_grammar_decides_what_may_be_written(backend):
    out = backend.chat(MESSAGES, max_tokens=12, grammar='root ::= "code-" [0-9]{3}')
    assert re.fullmatch(r"code-\d{3}", out.text), out.text


def test_plans_decoded_under_the_plan_schema_parse_on_both(backend, nx_kg):
    """In process the schema is a grammar; to llama-cpp-python's server it is the request's
    response_format (in the json_object form that server reads, after its refusal of
    OpenAI's json_schema form)."""
    from ragkit.kgqa.plan import parse_plan_json

    written: list[str] = []
    question = "What symptoms do diseases treated by Aspirin have?"
    _, info = nx_kg.plan(question, nx_kg.names.resolve(question), None,
                         TokenTap(backend, lambda piece, call: written.append(piece)), use_llm_planner=True)
    plan = parse_plan_json("".join(written))
    assert info.llm_plan_constrained and plan.steps and plan.final == f"s{len(plan.steps)}"
    assert plan.steps[0].to_dict()["from"] == {"entity": "compound:aspirin"}
    if isinstance(backend, ServerLLM):
        assert backend._schema_form == "json_object"


def test_a_json_schema_constrains_both(backend):
    schema = {"type": "object", "properties": {"capital": {"type": "string", "enum": ["Paris", "Lyon"]},
                                               "sure": {"type": "boolean"}},
              "required": ["capital", "sure"], "additionalProperties": False}
    out = backend.chat(MESSAGES, max_tokens=30, json_schema=schema)
    assert json.loads(out.text)["capital"] in ("Paris", "Lyon")


def test_the_server_model_is_discovered_and_named_in_requests(llm_server_url, server_llm):
    """llama-cpp-python's server lists its model by the path it was given; a request naming
    another model is answered by its only one, so the id is what matters here."""
    import httpx

    listed = httpx.get(f"{llm_server_url}/v1/models").json()["data"][0]["id"]
    assert server_llm.model() == listed and server_llm.name == listed.rsplit("/", 1)[-1]
    named = ServerLLM(LLMConfig(server_url=llm_server_url, server_model=listed))
    assert named.chat(MESSAGES, max_tokens=12).text == server_llm.chat(MESSAGES, max_tokens=12).text
    named.close()


def test_a_grammar_that_does_not_compile_never_reaches_the_server(server_llm):
    """llama_cpp.server would crash on it: the local llama.cpp parses it first."""
    with pytest.raises(ModelError, match=r"^grammar: does not compile \(.*'foo'"):
        server_llm.chat(MESSAGES, max_tokens=5, grammar="root ::= foo")
    assert server_llm.chat(MESSAGES, max_tokens=5).text


def test_token_counts_use_the_model_tokenizer(backend, gguf):
    for text in PLAIN_TEXTS:
        assert backend.count_tokens(text) == gguf.count_tokens(text) > 0
    assert backend.count_tokens("") == 0


def test_server_and_in_process_write_the_same_answer(gguf, server_llm):
    """Same model, same greedy decoding. The server reuses its KV cache across requests,
    which evaluates the prompt in other batches; where two tokens are all but tied that
    can change a later token, so longer answers are compared on their first 100 characters."""
    assert server_llm.chat(MESSAGES, max_tokens=48).text == gguf.chat(MESSAGES, max_tokens=48).text
    flu = [{"role": "user", "content": "Name three symptoms of influenza."}]
    assert server_llm.chat(flu, max_tokens=48).text[:100] == gguf.chat(flu, max_tokens=48).text[:100]


def test_token_tap_numbers_each_generation(backend):
    seen: list[tuple[str, int]] = []
    tap = TokenTap(backend, lambda piece, call: seen.append((piece, call)))
    a = tap.chat(MESSAGES, max_tokens=12)
    b = tap.chat([{"role": "user", "content": "Say hello."}], max_tokens=12)
    assert "".join(p for p, c in seen if c == 1) == a.text
    assert "".join(p for p, c in seen if c == 2) == b.text
    assert tap.name == backend.name


def test_kg_answer_generator_runs_on_both(backend, tmp_path):
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import NxTypedStore
    from ragkit.pipelines.kg import ask_kg

    store = NxTypedStore(tmp_path / "kg.json.gz")
    import_kg(ROOT / "data/biomed/nodes.csv", ROOT / "data/biomed/edges.csv", store)
    answer = ask_kg("What symptoms do diseases treated by Aspirin have?", store, use_llm=True, llm=backend,
                    llm_config=SMALL_WINDOW)
    assert answer.trace["answer_source"] in ("model", "fallback")
    assert answer.trace["model_answer"].strip()
    assert answer.trace["context_store"]["final_result"]
    assert answer.citations


def test_lexical_pipeline_runs_on_both(backend, manual_index):
    from ragkit.pipelines.lexical import ask_lexical

    # a window of 1,024 tokens: the pipeline runs on either backend whatever the prompt's size
    answer = ask_lexical("Quy trình thay mũi khoan gồm các bước nào?", manual_index, llm=backend,
                         llm_config=SMALL_WINDOW)
    assert answer.answer.strip()
    assert answer.citations
    assert answer.trace["completion_tokens"] > 0
    assert answer.trace["raw_answer"].strip()
    assert answer.trace["answer_source"] in ("model", "fallback")


def test_a_server_that_is_down_is_one_clear_error():
    model = ServerLLM(LLMConfig(server_url=f"http://127.0.0.1:{free_port()}", server_timeout=5))
    with pytest.raises(ModelError, match=r"llm server http://127\.0\.0\.1:\d+: not reachable"):
        model.chat(MESSAGES, max_tokens=5)


def test_kg_falls_back_and_keeps_its_context_store_when_the_server_is_down(tmp_path):
    """The model-failure policy with a real failure: the server refuses connections."""
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import NxTypedStore
    from ragkit.pipelines.kg import ask_kg

    store = NxTypedStore(tmp_path / "kg.json.gz")
    import_kg(ROOT / "data/biomed/nodes.csv", ROOT / "data/biomed/edges.csv", store)
    down = ServerLLM(LLMConfig(server_url=f"http://127.0.0.1:{free_port()}", server_timeout=5))
    answer = ask_kg("What symptoms do diseases treated by Aspirin have?", store, use_llm=True, llm=down)
    assert answer.trace["answer_source"] == "fallback"
    assert answer.answer.startswith("Based on the data:")
    assert not answer.trace["check"]["passed"] and "not reachable" in answer.trace["fallback_reason"]
    assert answer.trace["context_store"]["final_result"]


def test_a_context_overflow_is_the_servers_message(server_llm):
    long = " ".join(["fever"] * 3000)
    with pytest.raises(ModelError, match=r"HTTP 4\d\d"):
        server_llm.chat([{"role": "user", "content": long}], max_tokens=10)


def test_ragkit_llm_url_selects_the_server(llm_server_url, tmp_path):
    assert isinstance(default_llm(LLMConfig.from_env({"RAGKIT_LLM_URL": llm_server_url + "/"})), ServerLLM)
    with pytest.raises(Exception, match="RAGKIT_LLM_URL: must be an http"):
        LLMConfig.from_env({"RAGKIT_LLM_URL": "127.0.0.1:8000"})
    store = tmp_path / "kg.json.gz"
    subprocess.run([sys.executable, "-m", "ragkit.cli", "kg", "import", "--nodes", str(ROOT / "data/biomed/nodes.csv"),
                    "--edges", str(ROOT / "data/biomed/edges.csv"), "--store", str(store), "--json"],
                   check=True, capture_output=True)
    out = subprocess.run([sys.executable, "-m", "ragkit.cli", "ask", "What diseases does Aspirin treat?",
                          "--pipeline", "kg", "--store", str(store), "--json"],
                         capture_output=True, text=True, env={**__import__("os").environ,
                                                              "RAGKIT_LLM_URL": llm_server_url,
                                                              "RAGKIT_LLM_TIMEOUT": "900"})
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["trace"]["answer_source"] in ("model", "fallback")
    assert data["trace"]["model_answer"].strip()


def test_rerank_judgements_agree_between_the_gguf_and_the_server(gguf, server_llm):
    """The rerank's Yes/No log-probabilities from llama_cpp.server's /v1/completions logprobs
    match the in-process logits wherever the server lists the token."""
    from ragkit.retrieval.rerank import NO, YES, LLMReranker, rerank_prompt, yes_no_logodds

    passages = [("Drill", "Unplug the drill before changing the bit, then loosen the chuck with its key."),
                ("Oven", "Preheat the oven to 180 degrees and bake the bread for forty minutes.")]
    for title, text in passages:
        prompt = rerank_prompt("How do I change a drill bit safely?", title, text)
        local, served = gguf.choice_logprobs(prompt, YES + NO), server_llm.choice_logprobs(prompt, YES + NO)
        listed = [(a, b) for a, b in zip(local, served) if b > min(served)]
        assert listed, "the server listed none of the answers"
        for a, b in listed:
            assert a == pytest.approx(b, abs=0.05)
        assert (yes_no_logodds(local) > 0) == (yes_no_logodds(served) > 0)
    scores = LLMReranker(server_llm, depth=2).scores("How do I change a drill bit safely?", passages)
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores)
