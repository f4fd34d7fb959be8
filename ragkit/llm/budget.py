"""Token-budgeted context (seed 002, section 5): join the chunks, and while the context is
over budget drop the least relevant (last) one; a single chunk still over budget is cut."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .prompts import CHUNK_SEPARATOR


@dataclass(frozen=True)
class BudgetedContext:
    text: str
    kept: int          # how many chunks made it in (a prefix of the input)
    dropped: int
    tokens: int
    truncated: bool    # the last kept chunk was cut to fit


def fit_context(chunks: Sequence[str], count_tokens: Callable[[str], int], budget: int,
                separator: str = CHUNK_SEPARATOR) -> BudgetedContext:
    """Keep the longest prefix of ``chunks`` whose joined text fits ``budget`` tokens."""
    if budget <= 0:
        raise ValueError(f"budget: must be positive, got {budget}")
    kept = list(chunks)
    text = separator.join(kept)
    used = count_tokens(text)
    while used > budget and len(kept) > 1:
        kept.pop()
        text = separator.join(kept)
        used = count_tokens(text)
    truncated = False
    if used > budget and kept:
        # One chunk alone is too long: keep its longest prefix that fits (binary search on
        # characters, measured with the real tokenizer).
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count_tokens(text[:mid]) <= budget:
                lo = mid
            else:
                hi = mid - 1
        text, truncated = text[:lo], True
        used = count_tokens(text)
    return BudgetedContext(text=text, kept=len(kept), dropped=len(chunks) - len(kept),
                           tokens=used, truncated=truncated)
