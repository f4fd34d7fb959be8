"""``ragkit serve``'s OpenAI-compatible endpoints (``ragkit.server.openai_chat``) as OpenAI clients see
them: the official ``openai`` package against a real ``ragkit serve --demo`` process on
127.0.0.1 that requires an API key; and ragkit's own server backend (``ServerLLM``) as a
client of it."""

import time

import httpx
import openai
import pytest

from ragkit.config import LLMConfig
from ragkit.testing.launch import free_port, running_http, serve_command
from ragkit.llm.remote import ServerLLM

pytestmark = pytest.mark.slow

KEY = "openai-test-key-0123456789"
Q1 = "What symptoms do diseases treated by Aspirin have?"
FOLLOW_UP = "and which of them affect the liver?"
PIPELINES = ["lexical", "spec", "causal", "graph", "kg"]
DEADLINE_S = 240


@pytest.fixture(scope="module")
def server(demo_dir, tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("serve-openai") / "server.log"
    command = serve_command(port, "--demo", str(demo_dir), "--api-key", KEY, "--workers", "2", "--timeout", "120")
    with running_http(command, f"http://127.0.0.1:{port}/health", timeout=180, log=log) as proc:
        for _ in range(600):            # /ready is 200 once every source is in
            if httpx.get(f"http://127.0.0.1:{port}/ready").status_code == 200:
                break
            time.sleep(0.25)
        yield {"http": f"http://127.0.0.1:{port}", "proc": proc, "log": log}


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server["http"] + "/v1", api_key=KEY, max_retries=0, timeout=DEADLINE_S)


def ask(server, body):
    return httpx.post(server["http"] + "/ask", json=body, headers={"Authorization": f"Bearer {KEY}"},
                      timeout=DEADLINE_S).json()


def user(*questions):
    return [{"role": "user", "content": q} for q in questions]


def test_models_are_the_served_pipelines_with_and_without_the_model_then_the_embedders(client):
    ids = [m.id for m in client.models.list()]
    assert ids == [*(m for p in PIPELINES for m in (f"ragkit-{p}", f"ragkit-{p}-no-llm")),
                   "all-MiniLM-L6-v2", "multilingual-e5-small"]


def test_a_completion_is_the_ask_answer_with_citations_in_the_ragkit_field(client, server):
    done = client.chat.completions.create(model="ragkit-kg-no-llm", messages=[
        {"role": "system", "content": "You are a helpful assistant."}, *user(Q1)])
    expected = ask(server, {"question": Q1, "pipeline": "kg", "no_llm": True})
    assert done.object == "chat.completion" and done.model == "ragkit-kg-no-llm"
    assert done.choices[0].message.content == expected["answer"]
    assert done.choices[0].finish_reason == "stop"
    extra = done.ragkit
    assert extra["citations"] == expected["citations"] and extra["citations"]
    assert extra["trace"]["answer_source"] == "evidence" and extra["trace"]["context_store"]["final_result"]
    assert extra["pipeline"] == "kg" and extra["question"] == Q1
    lexical = client.chat.completions.create(model="ragkit-lexical-no-llm",
                                             messages=user("Quy trình thay mũi khoan gồm các bước nào?"),
                                             extra_body={"ragkit": {"k": 2}})
    assert lexical.ragkit["citations"] and len(lexical.ragkit["citations"]) <= 2


def test_the_model_answers_within_max_tokens(client):
    done = client.chat.completions.create(model="ragkit-kg", messages=user(Q1), max_tokens=48)
    trace = done.ragkit["trace"]
    assert trace["answer_source"] in ("model", "fallback") and trace["raw_answer"].strip()
    assert 0 < done.usage.completion_tokens <= 48 and done.usage.prompt_tokens > 0
    assert done.choices[0].message.content.strip() and done.ragkit["citations"]


def test_a_streamed_completion_assembles_the_same_answer(client):
    for model, budget in (("ragkit-kg", 48), ("ragkit-graph-no-llm", None)):
        question = Q1 if model == "ragkit-kg" else "Aage Bohr có những giải thưởng gì?"
        whole = client.chat.completions.create(model=model, messages=user(question), max_tokens=budget)
        chunks = list(client.chat.completions.create(model=model, messages=user(question), max_tokens=budget,
                                                     stream=True, stream_options={"include_usage": True}))
        assert chunks[0].choices[0].delta.role == "assistant"
        pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
        last = [c for c in chunks if c.choices][-1]
        # The model's text as it wrote it (without a model, the answer in pieces); the
        # checked answer in the last chunk.
        streamed = last.ragkit["trace"]["raw_answer"] if model == "ragkit-kg" else whole.choices[0].message.content
        assert len(pieces) > 3 and "".join(pieces) == streamed
        assert last.ragkit["answer"] == whole.choices[0].message.content
        assert last.choices[0].finish_reason == "stop"
        assert last.ragkit["citations"] == whole.ragkit["citations"] and last.ragkit["citations"]
        assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == whole.usage.total_tokens


def test_a_failure_after_the_stream_began_is_an_error_event(client):
    """4096 tokens for the answer leave no room in n_ctx 2048: refused as /ask refuses it
    (400), after the first chunk went out."""
    with pytest.raises(openai.APIError, match="^n_ctx: 2048 leaves no room for context after prompt 150 and "
                                              "generation 4096$") as caught:
        for _ in client.chat.completions.create(model="ragkit-kg", messages=user(Q1), max_tokens=4096, stream=True):
            pass
    assert caught.value.body["code"] is None and caught.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError, match="n_ctx: 2048 leaves no room"):
        client.chat.completions.create(model="ragkit-kg", messages=user(Q1), max_tokens=4096)


def test_earlier_user_messages_carry_kg_follow_ups(client):
    done = client.chat.completions.create(model="ragkit-kg-no-llm", messages=[
        *user(Q1), {"role": "assistant", "content": "(the first answer)"}, *user(FOLLOW_UP)])
    assert '"them"' in done.ragkit["trace"]["standalone"]
    finals = {i["name"] for i in done.ragkit["trace"]["context_store"]["final_result"]}
    alone = client.chat.completions.create(model="ragkit-kg-no-llm", messages=user(FOLLOW_UP))
    assert finals and alone.ragkit["trace"]["standalone"] == FOLLOW_UP
    # A session, as in /ask, instead of the messages.
    first = client.chat.completions.create(model="ragkit-kg-no-llm", messages=user(Q1),
                                           extra_body={"ragkit": {"session": "new"}})
    session = first.ragkit["session"]
    follow = client.chat.completions.create(model="ragkit-kg-no-llm", messages=user(FOLLOW_UP),
                                            extra_body={"ragkit": {"session": session}})
    assert follow.ragkit["session"] == session
    assert {i["name"] for i in follow.ragkit["trace"]["context_store"]["final_result"]} == finals


@pytest.mark.parametrize("kwargs, error, message", [
    ({"model": "gpt-4o"}, openai.NotFoundError, "model: 'gpt-4o' is not served here (GET /v1/models lists ragkit-lexical"),
    ({"extra_body": {"ragkit": {"k": "3"}}}, openai.BadRequestError, "k: must be int, got str"),
    ({"extra_body": {"ragkit": {"cypher": "MATCH (n) DETACH DELETE n"}}}, openai.BadRequestError,
     "cypher: not a request field"),
    ({"messages": [{"role": "system", "content": "Be brief."}]}, openai.BadRequestError, "messages: has no user message"),
    ({"messages": user("x" * 2500)}, openai.BadRequestError, "question: 2500 characters, over the 2000-character limit"),
    ({"max_tokens": 0}, openai.BadRequestError, "max_tokens: must be between 1 and 4096, got 0"),
    ({"n": 2}, openai.BadRequestError, "n: ragkit writes one answer per question"),
])
def test_refusals_are_openai_errors_with_ragkits_one_line(client, kwargs, error, message):
    request = {"model": "ragkit-kg-no-llm", "messages": user(Q1), **kwargs}
    with pytest.raises(error) as caught:
        client.chat.completions.create(**request)
    body = caught.value.body
    assert body["message"].startswith(message) and "\n" not in body["message"]
    assert body["type"] in ("invalid_request_error", "not_found_error")


def test_the_api_key_is_the_clients(server):
    wrong = openai.OpenAI(base_url=server["http"] + "/v1", api_key="not-the-key-0123456789", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        wrong.models.list()
    assert caught.value.body == {"message": "authorization: the API key is not valid",
                                 "type": "authentication_error", "param": None, "code": None}
    raw = httpx.post(server["http"] + "/v1/chat/completions", json={"model": "ragkit-kg", "messages": user(Q1)})
    assert raw.status_code == 401 and raw.json()["error"]["message"] == (
        "authorization: send the API key as 'Authorization: Bearer <key>'")


def test_openapi_describes_ask_and_chat_completions(server):
    spec = httpx.get(server["http"] + "/openapi.json", headers={"Authorization": f"Bearer {KEY}"}).json()
    ask_body = spec["paths"]["/ask"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    fields = ask_body["properties"]
    assert ask_body["required"] == ["question"] and ask_body["additionalProperties"] is False
    assert fields["question"]["maxLength"] == 2000
    assert fields["pipeline"]["enum"] == PIPELINES and fields["pipeline"]["default"] == "lexical"
    assert {"minimum": 1, "maximum": 100, "type": "integer"}.items() <= fields["k"]["anyOf"][0].items()
    assert fields["max_tokens"]["anyOf"][0]["maximum"] == 4096 and "session" in fields
    assert set(fields) == {"question", "pipeline", "no_llm", "k", "method", "rerank", "rerank_depth", "bridges", "steps",
                           "depth", "max_hops", "top_k_paths", "history", "llm_planner", "at", "max_tokens", "session"}
    assert {"minimum": 1, "maximum": 3, "type": "integer"}.items() <= fields["steps"]["anyOf"][0].items()
    chat = spec["paths"]["/v1/chat/completions"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert chat["required"] == ["model", "messages"] and "k" in chat["properties"]["ragkit"]["properties"]
    assert "/v1/models" in spec["paths"]
    embeddings = spec["paths"]["/v1/embeddings"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert embeddings["required"] == ["model", "input"] and embeddings["properties"]["model"]["enum"] == [
        "all-MiniLM-L6-v2", "multilingual-e5-small"]


def test_ragkits_own_server_backend_is_a_client_of_it(server):
    """ServerLLM asks the first listed model (ragkit-lexical) unless told; named, it gets the
    kg pipeline's evidence answer as its generation."""
    first = ServerLLM(LLMConfig(server_url=server["http"], api_key=KEY))
    assert first.model() == "ragkit-lexical"
    kg = ServerLLM(LLMConfig(server_url=server["http"], api_key=KEY, server_model="ragkit-kg-no-llm"))
    out = kg.chat(user(Q1), max_tokens=64)
    assert out.text == ask(server, {"question": Q1, "pipeline": "kg", "no_llm": True})["answer"]
    pieces: list[str] = []
    assert kg.chat(user(Q1), max_tokens=64, on_token=pieces.append).text == out.text and len(pieces) > 3
    for model in (first, kg):
        model.close()
    log = server["log"].read_text()
    assert "Traceback" not in log and KEY not in log
