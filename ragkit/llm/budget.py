"""Token-budgeted context: join the chunks, and while the context is
over budget drop the least relevant (last) one; a single chunk still over budget is cut.

Every chunk is first cut to the whole budget (``token_prefix``): a 20 MB document contributes
at most a budget's worth of text, and is never tokenized whole.

Text that travels with the chunks (the step outline extracted from them) can be counted
against the same budget through ``extra``, so dropping a chunk also drops its steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence, TypeVar

from .prompts import CHUNK_SEPARATOR


T = TypeVar("T")

# Template tokens around each chat message (role markers, newlines) that a plain count of
# the message text does not see.
TEMPLATE_OVERHEAD = 16


def messages_tokens(messages: Sequence[dict], count_tokens: Callable[[str], int]) -> int:
    """The tokens a chat prompt of ``messages`` takes: their texts and the template's share."""
    return sum(count_tokens(m["content"]) for m in messages) + TEMPLATE_OVERHEAD * len(messages)


def first_fitting(prompts: Iterable[tuple[list[dict], T]], count_tokens: Callable[[str], int],
                  window: int) -> tuple[list[dict], T]:
    """The first of ``prompts`` (messages, and what the caller needs with them), from the
    fullest to the barest, whose messages take at most ``window`` tokens; the barest when
    none does."""
    found = None
    for found in prompts:
        if messages_tokens(found[0], count_tokens) <= window:
            return found
    if found is None:
        raise ValueError("no prompt to fit")
    return found


@dataclass(frozen=True)
class BudgetedContext:
    text: str
    extra: str         # what ``extra`` made of the kept chunks ("" without it)
    kept: int          # how many chunks made it in (a prefix of the input)
    dropped: int
    tokens: int        # tokens of text + extra
    truncated: bool    # a kept chunk was cut to fit
    chunks: tuple[str, ...] = ()   # the kept chunks as they are in ``text`` (cut ones cut)


def token_prefix(text: str, count_tokens: Callable[[str], int], budget: int) -> str:
    """The longest prefix of ``text`` of at most ``budget`` tokens, counted with the real
    tokenizer. A prefix of a few times the budget in characters is measured first and grown
    only while it still fits, so a huge text costs about what its kept part does."""
    if budget <= 0:
        return ""
    n = min(len(text), 4 * budget)
    while count_tokens(text[:n]) <= budget:
        if n == len(text):
            return text
        n = min(len(text), 2 * n)
    lo, hi = 0, n - 1                  # text[:n] is over; the answer is shorter
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def fit_context(chunks: Sequence[str], count_tokens: Callable[[str], int], budget: int,
                separator: str = CHUNK_SEPARATOR,
                extra: Callable[[list[str]], str] | None = None) -> BudgetedContext:
    """Keep the longest prefix of ``chunks`` whose joined text (plus ``extra``) fits."""
    if budget <= 0:
        raise ValueError(f"budget: must be positive, got {budget}")

    def measure(kept: list[str]) -> tuple[str, str, int]:
        text = separator.join(kept)
        more = extra(kept) if extra else ""
        return text, more, count_tokens(text) + (count_tokens(more) if more else 0)

    kept = [token_prefix(chunk, count_tokens, budget) for chunk in chunks]
    text, more, used = measure(kept)
    while used > budget and len(kept) > 1:
        kept.pop()
        text, more, used = measure(kept)
    if used > budget and kept:
        # One chunk alone is too long: keep its longest prefix that fits (binary search on
        # characters, measured with the real tokenizer).
        whole = kept[0]
        lo, hi = 0, len(whole)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if measure([whole[:mid]])[2] <= budget:
                lo = mid
            else:
                hi = mid - 1
        kept = [whole[:lo]]
        text, more, used = measure(kept)
    truncated = any(len(a) < len(b) for a, b in zip(kept, chunks))
    return BudgetedContext(text=text, extra=more, kept=len(kept), dropped=len(chunks) - len(kept),
                           tokens=used, truncated=truncated, chunks=tuple(kept))
