"""What a spec question says about which documents may answer it: a release ("in Rel-17",
"Release 16", "Rel-99"), a spec ("TS 23.501 says", "according to TR 21.905") or the latest version
("the latest version of TS 23.501"), and which stored documents meet it.

The store keeps each document's version and release (``spec_id`` "ts_23.501@16.4.0",
release "16"); a constraint keeps the documents that meet all it states, and
:func:`unmet` says, in one sentence, when none does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import VERSION_MARK

_RELEASE = re.compile(r"\b(?:rel(?:ease)?|phiên bản phát hành|bản phát hành)\s*[-.]?\s*(\d{1,2})\b", re.IGNORECASE)
# A spec is named with its kind ("TS 23.501", "3GPP TR 21.905"): a bare "10.000" is a number.
_SPEC = re.compile(r"\b(?:3gpp\s+)?(TS|TR)\s*(\d{2}\.\d{3})\b", re.IGNORECASE)
_LATEST = re.compile(r"\b(?:the\s+)?(?:latest|most\s+recent|newest|current)\s+(?:version|release)\b|"
                     r"\b(?:phiên\s+bản|bản)\s+mới\s+nhất\b", re.IGNORECASE)
# Words that only introduce a constraint: dropped with it when the question is read for terms.
_LEAD_IN = re.compile(r"\b(?:in|of|from|for|per|under|according\s+to|as\s+of|trong|theo)\s+(?:(?:the|3gpp)\s+)*$",
                      re.IGNORECASE)


@dataclass(frozen=True)
class SpecConstraint:
    """A question's constraint on the documents that may answer it ("" / False: none)."""

    release: str = ""           # "17"; "1999" for Release 99
    spec: str = ""              # "23.501"
    latest: bool = False

    def __bool__(self) -> bool:
        return bool(self.release or self.spec or self.latest)

    def describe(self) -> str:
        """"Release 17 version of 23.501", "Release 15 document", "document of 23.501"."""
        if self.release:
            return f"Release {self.release} version of {self.spec}" if self.spec else f"Release {self.release} document"
        return f"document of {self.spec}" if self.spec else "document"

    def to_dict(self) -> dict:
        return {"release": self.release, "spec": self.spec, "latest": self.latest}


def read_constraint(question: str) -> tuple[SpecConstraint, str]:
    """The constraint a question states, and the question without it (so that "Rel-17" is not
    read as a term): "What is SCP in Rel-17?" → (release 17, "What is SCP?")."""
    spans: list[tuple[int, int]] = []
    release = spec = ""
    if (found := _RELEASE.search(question)):
        release = "1999" if found.group(1) in ("99", "1999") else str(int(found.group(1)))
        spans.append(found.span())
    if (found := _SPEC.search(question)):
        spec = found.group(2)
        spans.append(found.span())
    latest = False
    if (found := _LATEST.search(question)):
        latest = True
        spans.append(found.span())
    rest = question
    for start, end in sorted(spans, reverse=True):
        rest = f"{_LEAD_IN.sub('', rest[:start])} {rest[end:]}"
    rest = re.sub(r"^\s*[,;:]\s*", "", re.sub(r"\s+([?.!,;:])", r"\1", re.sub(r"\s{2,}", " ", rest))).strip()
    return SpecConstraint(release, spec, latest), rest or question


def spec_number(spec_id: str) -> str:
    """"23.501" from "ts_23.501@16.4.0"."""
    found = re.search(r"(\d{2}\.\d{3})", spec_id.split(VERSION_MARK, 1)[0])
    return found.group(1) if found else ""


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def allowed_documents(constraint: SpecConstraint, documents: list[dict]) -> set[str]:
    """The spec_ids of the stored ``documents`` (``GraphStore.documents()``) that meet the
    constraint: the release and spec it names, and with ``latest`` only the highest version of
    each spec. Every document when there is no constraint."""
    chosen = [d for d in documents
              if (not constraint.release or str(d.get("release", "")) == constraint.release)
              and (not constraint.spec or spec_number(d["spec_id"]) == constraint.spec)]
    if constraint.latest:
        newest: dict[str, dict] = {}
        for d in chosen:
            key = spec_number(d["spec_id"]) or d["spec_id"]
            if key not in newest or _version_key(d.get("version", "")) > _version_key(newest[key].get("version", "")):
                newest[key] = d
        chosen = list(newest.values())
    return {d["spec_id"] for d in chosen}


def unmet(constraint: SpecConstraint, documents: list[dict]) -> str:
    """One sentence for a constraint no stored document meets, naming what the store holds."""
    held = sorted({(spec_number(d["spec_id"]) or d["spec_id"], str(d.get("release", "")) or "?") for d in documents})
    listing = ", ".join(f"{spec} Release {release}" for spec, release in held) or "no documents"
    return f"The loaded specifications hold no {constraint.describe()} (they hold {listing})."


__all__ = ["SpecConstraint", "allowed_documents", "read_constraint", "spec_number", "unmet"]
