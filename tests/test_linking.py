"""Entity linking (ragkit.text.linking): spans of a question matched to what a store knows,
tolerant of case, plurals, punctuation, diacritics written or not, and small typos."""

from ragkit.text.linking import Linker, Surface, singular

SURFACES = [
    Surface("Service Communication Proxy", "scp-name", "term"),
    Surface("SCP", "SCP", "abbreviation"),
    Surface("Operating band", "operating-band", "term"),
    Surface("Elementary File (EF)", "ef-name", "term"),
    Surface("Non-Seamless Non-3GPP offload", "nswo", "term"),
    Surface("IN", "IN", "abbreviation"),
    Surface("Release", "release", "term"),
    Surface("Aspirin", "aspirin", "node"),
    Surface("nắng", "sunshine", "alias"),
    Surface("PM2.5", "pm25", "node"),
    Surface("PDU Session", "pdu-session", "term"),
    Surface("PDU", "PDU", "abbreviation"),
]
LINKER = Linker(SURFACES, kinds_order=("term", "abbreviation"))


def linked(question, **kw):
    return [(l.text, l.target, l.how) for l in LINKER.link(question, **kw)]


def test_singular_forms():
    assert [singular(w) for w in ("bands", "proxies", "addresses", "status", "bus", "sms", "gas")] == \
        ["band", "proxy", "address", "status", "bus", "sms", "gas"]


def test_case_plural_quotes_and_parentheses():
    assert linked("What is the definition of Operating Band?") == [("Operating Band", "operating-band", "normalized")]
    assert linked("what are 'operating bands'?") == [("operating bands", "operating-band", "normalized")]
    assert linked("What is an Elementary File (EF)?")[0][:2] == ("Elementary File (EF", "ef-name")
    assert linked("What is non seamless non 3GPP offload?")[0][1] == "nswo"
    assert linked("service communication proxies") == [("service communication proxies", "scp-name", "normalized")]


def test_longest_span_wins_and_spans_do_not_overlap():
    assert linked("When is a PDU Session released?") == [("PDU Session", "pdu-session", "exact")]
    assert [t for _, t, _ in linked("Does the SCP carry PDU data?")] == ["SCP", "PDU"]


def test_abbreviations_that_are_common_words_need_capitals():
    assert linked("What is SCP in 5G?") == [("SCP", "SCP", "exact")]       # "in" is not IN
    assert linked("What does IN stand for?") == [("IN", "IN", "exact")]
    assert linked("WHAT DOES SCP DO IN 5G") == [("SCP", "SCP", "exact")]   # written all in capitals
    assert linked("what does scp stand for") == [("scp", "SCP", "normalized")]


def test_typos_link_but_inflections_and_abbreviations_do_not():
    assert linked("Which diseases does Asprin treat?") == [("Asprin", "aspirin", "fuzzy")]
    assert linked("How are sessions released?") == []          # "released" is not a typo of "Release"
    assert linked("What is SCF?") == []                         # an abbreviation matches exactly or not at all


def test_diacritics_only_dropped_where_the_question_writes_none():
    assert linked("trời nắng") == [("nắng", "sunshine", "exact")]
    assert linked("troi nang") == [("nang", "sunshine", "accent-free")]
    assert linked("ô nhiễm nặng hơn") == []                    # "nặng" (heavy) is not "nắng" (sunshine)


def test_links_say_why_and_can_be_limited_to_kinds():
    link = LINKER.link("Define operating bands")[0]
    assert link.kind == "term" and "operating band" in link.why.lower() and link.to_dict()["how"] == "normalized"
    assert linked("SCP and Service Communication Proxy", kinds=("abbreviation",)) == [("SCP", "SCP", "exact")]


# Sample texts whose keys exercise every rule of key_of, words and singular: case, plurals
# (-ies, -sses, -xes, -ches, -shes, -zes, -s, and the endings kept), possessives with either
# apostrophe, hyphens, slashes, parentheses, diacritics, digits, short words.
KEY_SAMPLES = ["Service Communication Proxies", "addresses boxes churches brushes quizzes",
               "status bus gas basis photos", "Curie's", "Curie’s theory", "the Beatles' albums",
               "Non-Seamless Non-3GPP offload", "Elementary File (EF)", "máy phay CNC", "Đường",
               "PM2.5 levels", "UE/RAN", "IN", "a", "Xã hội's"]


def test_saved_keys_carry_the_version_of_the_key_function():
    """A store saves its surfaces' keys with KEY_VERSION and reuses them only at that
    version. Changing what key_of, words or singular return changes this digest: bump
    KEY_VERSION with it, so keys saved by an earlier ragkit are computed again."""
    import hashlib

    from ragkit.text.linking import KEY_VERSION, surface_keys

    digest = hashlib.sha256("\n".join(surface_keys(KEY_SAMPLES)).encode()).hexdigest()[:16]
    assert (KEY_VERSION, digest) == (1, DIGEST_AT_VERSION_1), surface_keys(KEY_SAMPLES)


DIGEST_AT_VERSION_1 = "b6ce22d124ec52ac"


def test_a_linker_given_saved_keys_links_as_one_that_computes_them():
    import pytest

    from ragkit.text.linking import surface_keys

    given = Linker(SURFACES, kinds_order=("term", "abbreviation"), keys=surface_keys(s.text for s in SURFACES))
    for question in ("What does the SCP do?", "operating bands of NR", "elementary files (EF)",
                     "non 3GPP offload in Release 17", "Asprin and nang", "PM2.5 in PDU sessions"):
        assert given.link(question) == LINKER.link(question)
    assert given.by_key == LINKER.by_key and len(given) == len(LINKER)
    with pytest.raises(ValueError, match="keys: 2 for 12 surfaces"):
        Linker(SURFACES, keys=["a", "b"])
