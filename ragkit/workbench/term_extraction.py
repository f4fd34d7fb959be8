"""Notebook ``02_term_extraction``: the abbreviations and definitions each spec yields, and where specs disagree."""

from __future__ import annotations

import pandas as pd

from .kg_builder import KGParams


def extracted_terms(p: KGParams) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Abbreviations and definitions as the specs give them (before merging)."""
    from ..specs.ingest import load_spec
    from ..specs.terms import extract_terms

    abbreviations, definitions = [], []
    for path in p.spec_paths:
        a, d = extract_terms(load_spec(path))
        abbreviations += [vars(x) for x in a]
        definitions += [vars(x) for x in d]
    return pd.DataFrame(abbreviations), pd.DataFrame(definitions)


def multiple_expansions(abbreviations: pd.DataFrame) -> pd.DataFrame:
    """Abbreviations with more than one expansion, each with the specs that give it."""
    if abbreviations.empty:
        return abbreviations
    grouped = abbreviations.groupby(["abbreviation", "full_name"])["spec_id"].apply(
        lambda s: ", ".join(sorted(set(s)))).reset_index()
    counts = grouped.groupby("abbreviation")["full_name"].transform("count")
    return grouped[counts > 1].reset_index(drop=True)


def spec_conflicts(abbreviations: pd.DataFrame) -> pd.DataFrame:
    """Abbreviations that two specs expand differently (the 5G spec wins primary_spec)."""
    if abbreviations.empty:
        return abbreviations
    per_spec = abbreviations.groupby("abbreviation")["spec_id"].nunique()
    several = multiple_expansions(abbreviations)
    return several[several["abbreviation"].isin(per_spec[per_spec > 1].index)].reset_index(drop=True)
