"""Lexicons as data: closed word classes that ragkit's readers recognise, each in a JSON
file of this folder with its ``purpose``, its ``languages``, how it is matched and its
``source`` (a grammar, a standard), so that what a rule knows can be read, cited and
extended without reading the rule.

- ``units.json``: units of measure and the quantity each measures (``quantity_of``);
- ``weekdays.json``: the days of the week (``is_weekday``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..tokens import strip_accents

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Lexicon:
    """One lexicon file: what it is for, where its words come from, and its entries."""

    name: str
    purpose: str
    languages: tuple[str, ...]
    source: str
    matching: str = ""
    entries: dict = field(default_factory=dict, repr=False)


@lru_cache(maxsize=None)
def lexicon(name: str) -> Lexicon:
    """The lexicon ``name`` (a file ``<name>.json`` of this folder)."""
    data = json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))
    meta = ("name", "purpose", "languages", "source", "matching")
    return Lexicon(data["name"], data["purpose"], tuple(data["languages"]), data["source"], data.get("matching", ""),
                   {k: v for k, v in data.items() if k not in meta})


def lexicons() -> list[Lexicon]:
    """Every lexicon of this folder, by name."""
    return [lexicon(p.stem) for p in sorted(HERE.glob("*.json"))]


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[\w/]+", strip_accents(text.lower())))


@lru_cache(maxsize=1)
def _quantities() -> tuple[dict[str, str], dict[str, str]]:
    entries = lexicon("units").entries
    words = {_plain(w): q for q, ws in entries["quantities"].items() for w in ws}
    symbols = {s: q for q, ss in entries["symbols"].items() for s in ss}
    return words, symbols


def quantity_of(unit: str) -> str | None:
    """The quantity a unit or a quantity's noun measures ("kW" and "công suất" -> "power",
    "giờ" -> "time", "€" -> "money"); None for a word that is no unit ("holes", "people")."""
    words, symbols = _quantities()
    unit = unit.strip()
    if unit in symbols:
        return symbols[unit]
    return words.get(_plain(unit))


def is_weekday(text: str) -> bool:
    """Whether ``text`` is a day of the week and nothing more ("Tuesday", "thứ Ba")."""
    plain, days = _plain(text), lexicon("weekdays").entries["words"]
    return plain in days or plain.removesuffix("s") in days
