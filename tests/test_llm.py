"""The GGUF layer against the real SmolLM2 model, and the prompt/post-processing logic."""

import pytest

from ragkit.config import LLMConfig
from ragkit.errors import InputError, ModelError
from ragkit.llm.budget import fit_context
from ragkit.llm.gguf import GGUFModel, check_gguf, default_model_path
from ragkit.llm.grounding import check_grounding
from ragkit.llm.postprocess import filter_think_tags, looks_english
from ragkit.llm.prompts import extract_outline, lexical_messages


def test_default_model_ships_in_the_wheel():
    path = default_model_path()
    assert path.suffix == ".gguf" and check_gguf(path) == path


def test_not_a_gguf_is_refused(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ModelError, match="not a GGUF file"):
        GGUFModel(LLMConfig(model_path=str(fake)))
    with pytest.raises(ModelError, match="no such file"):
        check_gguf(tmp_path / "missing.gguf")


def test_loading_is_lazy_and_counting_does_not_load_weights():
    model = GGUFModel(LLMConfig())
    assert not model.loaded
    assert model.count_tokens("Bước 1: Làm sạch bàn máy") > 5
    assert not model.loaded
    assert model.count_tokens("") == 0


def test_real_tokenizer_counts_vietnamese_differently_from_len_over_4(gguf):
    text = "Các bước vận hành máy phay đứng vạn năng"
    assert gguf.count_tokens(text) != len(text) // 4
    assert gguf.count_tokens(text + " " + text) > gguf.count_tokens(text)


@pytest.mark.slow
def test_generation_is_deterministic_and_well_formed(gguf):
    messages = [{"role": "system", "content": "You are concise."},
                {"role": "user", "content": "Name three colours."}]
    first = gguf.chat(messages, max_tokens=24, temperature=0.0, seed=7)
    second = gguf.chat(messages, max_tokens=24, temperature=0.0, seed=7)
    assert first.text == second.text and first.text.strip()
    assert 0 < first.completion_tokens <= 24
    assert first.prompt_tokens > 0 and first.finish_reason in ("stop", "length")
    assert "<|im_end|>" not in first.text
    assert gguf.chat_format  # the GGUF's template or the ChatML fallback


def test_think_tags():
    assert filter_think_tags("<think>x</think>Đáp án") == "Đáp án"
    assert filter_think_tags("Đáp án <think>lan man không đóng") == "Đáp án"
    assert filter_think_tags("Đáp án</think>") == "Đáp án"
    assert filter_think_tags("<THINK>a</THINK>b<think>c</think>d") == "bd"


def test_language_check():
    english = "First you must clean the table and then fix the workpiece in the vise with the clamps"
    assert looks_english(english)
    assert not looks_english("Bước đầu tiên là làm sạch bàn máy và gá phôi chắc chắn trên ê tô.")


def test_fit_context_drops_least_relevant_last_chunk_first():
    count = lambda s: len(s.split())  # noqa: E731  (a stand-in tokenizer for the unit test)
    chunks = ["a b c", "d e f", "g h i"]
    out = fit_context(chunks, count, budget=8)
    assert out.kept == 2 and out.dropped == 1 and out.text.startswith("a b c")
    alone = fit_context(["w " * 50], count, budget=10)
    assert alone.truncated and alone.tokens <= 10


def test_fit_context_with_the_real_tokenizer(gguf):
    chunks = ["Bước 1: Làm sạch bàn máy. " * 40, "Bước 2: Gá phôi. " * 40, "Bước 3: Lắp dao. " * 40]
    out = fit_context(chunks, gguf.count_tokens, budget=400)
    assert out.tokens <= 400 and out.kept >= 1


def test_outline_extraction():
    texts = ["Giới thiệu\nBước 1: Làm sạch\n- Bước 2. Gá phôi", "buoc 3: Bật máy\nBước 1: Làm sạch"]
    assert extract_outline(texts) == ["Bước 1: Làm sạch", "Bước 2: Gá phôi", "Bước 3: Bật máy"]


def test_prompt_has_the_seed_sections():
    messages = lexical_messages("Các bước?", "[1] x", ["Bước 1: a"])
    assert messages[0]["role"] == "system" and "CHỈ dùng thông tin" in messages[0]["content"]
    user = messages[1]["content"]
    for section in ("NGỮ CẢNH:", "SƯỜN TRÍCH XUẤT:", "YÊU CẦU:", "- Câu hỏi: Các bước?",
                    "Trả lời bằng tiếng Việt"):
        assert section in user


def test_grounding():
    evidence = ["Bước 1: Làm sạch bàn máy. Tốc độ trục chính 400 vòng/phút."]
    ok = check_grounding("Làm sạch bàn máy, đặt tốc độ 400 vòng/phút.", evidence)
    assert ok.grounded and ok.support == 0.9 and ok.unsupported_words == ["đặt"]
    invented = check_grounding("Đặt tốc độ 9000 vòng/phút.", evidence)
    assert not invented.grounded and invented.unsupported_numbers == ["9000"]
    offtopic = check_grounding("Hãy mua cổ phiếu ngân hàng hôm nay.", evidence)
    assert not offtopic.grounded and offtopic.support < 0.6
    looping = check_grounding("bàn máy bàn máy bàn máy bàn máy bàn máy bàn máy", evidence)
    assert not looping.grounded and "repeats" in looping.reason
    assert not check_grounding("", evidence).grounded


def test_config_budget_and_validation():
    cfg = LLMConfig()
    assert cfg.context_tokens == 2048 - 150 - 320
    with pytest.raises(InputError, match="n_ctx"):
        LLMConfig(n_ctx=400, prompt_tokens=150, max_tokens=320)
    assert LLMConfig.from_env({"RAGKIT_N_CTX": "4096"}).n_ctx == 4096
    with pytest.raises(InputError, match="RAGKIT_THREADS"):
        LLMConfig.from_env({"RAGKIT_THREADS": "two"})


@pytest.mark.slow
def test_gguf_without_a_chat_template_falls_back_to_chatml(tmp_path):
    """A real GGUF whose template key is renamed (same length, so every offset holds):
    llama.cpp sees no template, and ragkit must apply ChatML, the design's format."""
    data = default_model_path().read_bytes()
    key = b"tokenizer.chat_template"
    assert data.count(key) == 1
    plain = tmp_path / "no_template.gguf"
    plain.write_bytes(data.replace(key, b"tokenizer.chat_xemplate"))
    model = GGUFModel(LLMConfig(model_path=str(plain), n_threads=2))
    try:
        assert not model.llama.metadata.get("tokenizer.chat_template")
        assert model.chat_format == "chatml"
        out = model.chat([{"role": "user", "content": "Say hello."}], max_tokens=8)
        assert out.completion_tokens > 0 and "<|im_start|>" not in out.text
    finally:
        model.close()


def test_explicit_chat_format_is_used(gguf):
    model = GGUFModel(LLMConfig(chat_format="chatml", n_threads=2))
    try:
        model.count_tokens("x")
        model.llama  # noqa: B018  (load)
        assert model.chat_format == "chatml"
    finally:
        model.close()


def test_generation_uses_every_available_core(gguf):
    from ragkit.llm.gguf import available_cores

    llama = gguf._llama or gguf._load()
    assert llama.context_params.n_threads == llama.context_params.n_threads_batch == available_cores() >= 1
