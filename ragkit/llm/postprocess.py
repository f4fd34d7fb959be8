"""Post-processing of model output: ``<think>`` blocks removed, and the check for an answer in English."""

from __future__ import annotations

import re

from ..text import english_word_count, vietnamese_char_count

_CLOSED = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(r"<think>", re.IGNORECASE)
_ORPHAN = re.compile(r"</?think>", re.IGNORECASE)


def filter_think_tags(text: str) -> str:
    """Remove reasoning the model wrote in ``<think>`` tags.

    Closed blocks are removed; an unclosed ``<think>`` drops everything after it; orphan
    tags are removed. (Qwen3 models emit these.)

    >>> filter_think_tags("<think>hmm</think>Trả lời. <think>lan man")
    'Trả lời.'
    """
    text = _CLOSED.sub("", text)
    if _OPEN.search(text):
        text = _OPEN.split(text)[0]
    return _ORPHAN.sub("", text).strip()


def looks_english(text: str, *, min_english_words: int = 10, max_vietnamese_chars: int = 5) -> bool:
    """Whether the text reads as English: more than 10 English-looking words and fewer than 5 Vietnamese letters."""
    return (english_word_count(text) > min_english_words
            and vietnamese_char_count(text) < max_vietnamese_chars)
