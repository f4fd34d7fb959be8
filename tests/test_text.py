from hypothesis import given, strategies as st

from ragkit.text import Tokenizer, apply_synonyms, strip_accents, tokenize


def test_seed_examples():
    assert tokenize("Bước 1: Làm sạch") == ["buoc", "1", "lam", "sach"]
    assert " ".join(tokenize("Các bước vận hành")) == "cac buoc van hanh"


def test_d_with_stroke_becomes_d():
    assert strip_accents("Đường đi") == "Duong di"
    assert tokenize("ĐIỆN đà") == ["dien", "da"]


def test_accent_stripped_query_matches_accented_text():
    assert tokenize("quy trình") == tokenize("quy trinh") == tokenize("QUY TRÌNH")


def test_bigrams_add_neighbouring_syllables():
    tok = Tokenizer(bigrams=True)
    assert tok("máy phay đứng") == ["may", "phay", "dung", "may_phay", "phay_dung"]
    assert tok("máy") == ["may"]


def test_keep_accents_option():
    assert Tokenizer(accents=True)("Máy Phay") == ["máy", "phay"]


def test_english_stopwords_and_stems():
    assert Tokenizer(lang="en")("The proteins were binding to the receptors") == \
        ["protein", "bind", "receptor"]


def test_synonyms():
    tok = Tokenizer(synonyms={"rh": "relative_humidity"})
    assert tok("RH cao") == ["relative_humidity", "cao"]
    assert apply_synonyms(["a", "rh"], {"rh": "x"}) == ["a", "x"]


def test_unknown_lang_is_refused():
    import pytest

    with pytest.raises(ValueError, match="lang"):
        Tokenizer(lang="fr")


def test_round_trip_of_settings():
    tok = Tokenizer(lang="vi", bigrams=True, synonyms={"a": "b"})
    assert Tokenizer.from_dict(tok.to_dict()) == tok


@given(st.text())
def test_tokens_are_ascii_alphanumeric(text):
    for token in tokenize(text):
        assert token and token.isascii() and token.isalnum() and token == token.lower()


@given(st.text())
def test_tokenize_is_idempotent(text):
    tokens = tokenize(text)
    assert tokenize(" ".join(tokens)) == tokens


@given(st.text(alphabet="aáàảãạăắằâấđeéêếiíoóôốơớuúưứyý ", max_size=60))
def test_stripping_accents_never_changes_token_count(text):
    assert len(tokenize(text)) == len(text.split())
