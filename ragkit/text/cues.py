"""Cue lexicons: the closed word lists that recognise kinds of text, in one place.

Each list says what it recognises and how it is matched (phrases found as substrings of
lower-cased text, or words compared token by token; accented, or accent-stripped where the
text is normalised first). The grammar tables of one algorithm (the words that join a name,
the head nouns a question asks for) stay beside that algorithm.
"""

from __future__ import annotations

# --------------------------------------------------------------- what a spec section is about
# Phrases that say what a network function does (a "function" chunk; the spec pipeline's role
# questions look for them too). Matched in the lower-cased chunk text.
FUNCTION_CUES = ("is responsible for", "provides", "functionality", "functionalities",
                 "includes the following", "supports the following", "is used for", "is used to")
# Words of a clause title that make its chunks a procedure, or an overview.
PROCEDURE_TITLE_CUES = ("procedure", "call flow", "step")
OVERVIEW_TITLE_CUES = ("overview", "general", "introduction", "scope", "architecture")

# --------------------------------------------------------------- procedures (accent-stripped)
# A question that asks for the steps of a procedure ("các bước", "quy trình", "trình tự").
PROCEDURE_QUESTION_CUES = ("cac buoc", "quy trinh", "trinh tu")
# A text that lays a procedure out ("quy trình", "trình tự", "bao gồm").
PROCEDURE_TEXT_CUES = ("quy trinh", "trinh tu", "bao gom")

# --------------------------------------------------------------- questions about the whole corpus
# (accent-stripped, matched on normalised tokens) The aspect a question about the whole corpus
# asks for ...
CORPUS_ASPECT_CUES = (
    "theme", "themes", "thematic", "topic", "topics", "overview", "overall", "summary", "summaries",
    "summarize", "summarise", "summarizing", "main points", "key points", "main ideas", "main subjects",
    "main content", "big picture", "gist",
    "chu de", "tong quan", "tom tat", "tom luoc", "noi dung chinh", "y chinh", "diem chinh", "tong the",
    "van de chinh",
)
# ... or the collection itself.
CORPUS_SCOPE_CUES = (
    "corpus", "collection", "these documents", "the documents", "all documents", "all the documents",
    "these texts", "these passages", "these articles", "these manuals", "whole dataset",
    "tai lieu nay", "cac tai lieu", "bo tai lieu", "toan bo", "van ban nay", "cac van ban",
)

# --------------------------------------------------------------- reference within a text
# Words that open a sentence whose subject an earlier sentence named: English personal and
# possessive pronouns and demonstratives, Vietnamese third-person pronouns (a closed class of
# each grammar; compared with a sentence's first word, lower-cased).
ANAPHORS = frozenset("""he she it they his her its their this these those such
    nó họ ông bà anh chị cô""".split())

# --------------------------------------------------------------- refusals
# Phrases of an answer that says the evidence is not enough (matched in its lower-cased words).
REFUSAL_CUES = (
    "not enough", "does not say", "do not say", "doesn't say", "no information", "cannot answer",
    "can't answer", "not mentioned", "not stated", "enough information", "insufficient", "không đủ",
    "không có thông tin",
    "không nêu", "không đề cập", "chưa đủ", "không tìm thấy", "could not find", "cannot find", "can not find",
    "unable to find", "unable to answer", "does not mention", "do not mention", "doesn't mention",
    "không thể trả lời", "chưa có thông tin", "không được đề cập",
)
# The words a refusal is made of, whatever it refuses: a refusal with no other word refuses
# the whole question.
REFUSAL_WORDS = frozenset(
    """evidence information info context contexts document documents doc docs source sources passage passages
    text texts excerpt excerpts data material materials answer answers answered question questions provided provide
    given available enough sufficient insufficient find found mention mentions mentioned say says said state states
    stated contain contains contained able unable determine sorry retrieved specify specified detail details
    however unfortunately help matter matters issue issues topic topics point
    bằng chứng thông tin tài liệu ngữ cảnh dữ liệu nguồn đoạn trích văn bản trả lời câu hỏi cung cấp đủ tìm thấy nêu
    đề cập xin lỗi rất tiếc hiện biết xác định chắc chắn thể nội dung chi tiết tuy nhiên đáng vấn chủ điều""".split())
# What an answer calls its evidence (English words; Vietnamese two-syllable words): a short
# sentence whose subject it is, negated ("the documents do not state ...", "tài liệu không
# cung cấp ..."), says the evidence lacks something.
SOURCE_NOUNS = frozenset("""evidence document documents context contexts text texts passage passages sources
    excerpt excerpts""".split())
SOURCE_NOUNS_VI = (("tài", "liệu"), ("bằng", "chứng"), ("ngữ", "cảnh"), ("đoạn", "trích"), ("văn", "bản"))

# --------------------------------------------------------------- polarity
# Words that negate what follows them, English and Vietnamese (lower case, accented); "n't" is
# read as "not".
NEGATIONS = frozenset("""not no never none nor neither without cannot nobody nothing nowhere
    không chưa chẳng chả đừng chớ cấm""".split())
# Compounds that negate nothing: air, space, no-load, air force, midair, "not only", "không
# những/chỉ" (not only), "chẳng hạn" (for example), "chưa kể" (not to mention).
NOT_NEGATING = {"không": frozenset("khí gian tải quân trung chỉ những".split()), "not": frozenset({"only"}),
                "chẳng": frozenset({"hạn"}), "chưa": frozenset({"kể"})}
# Verbs that drop what follows ("skip the check", "bỏ qua bước 2"): a step said to be skipped
# has the opposite polarity of the step stated as done.
DROPPING_VERBS = frozenset("skip skipping skipped omit omitting omitted bypass unnecessary needless".split())
DROPPING_PAIRS = {"bỏ": frozenset({"qua"})}
# Words that answer a yes/no question: they say what the rest of the sentence says.
ANSWER_WORDS = frozenset("yes yeah yep vâng dạ".split())
# Words that hedge a statement ("may", "có thể"): a hedged quote proves nothing.
HEDGES = ("may", "might", "could", "possibly", "perhaps", "unclear", "có thể")

# --------------------------------------------------------------- names and ranges
# Words that give another name for what stands before them ("Velmora or Velmorra",
# "Tenochtitlan, also known as ...", "Ann Smith (née Jones)"); compared accent-stripped.
RENAMING_WORDS = frozenset("or aka also known as called formerly nee née alias".split())
# Phrases of a question that asks for the upper, or the lower, end of a range ("at most",
# "tối đa"; matched after a space in the lower-cased question).
MAXIMUM_CUES = ("maximum", "at most", "highest", "largest", "greatest", "up to", "upper limit", "max ",
                "tối đa", "cao nhất", "lớn nhất", "nhiều nhất")
MINIMUM_CUES = ("minimum", "at least", "lowest", "smallest", "fewest", "lower limit", "min ",
                "tối thiểu", "thấp nhất", "nhỏ nhất", "ít nhất")

__all__ = ["ANSWER_WORDS", "CORPUS_ASPECT_CUES", "CORPUS_SCOPE_CUES", "DROPPING_PAIRS", "DROPPING_VERBS",
           "FUNCTION_CUES", "HEDGES", "MAXIMUM_CUES", "MINIMUM_CUES", "NEGATIONS", "NOT_NEGATING",
           "OVERVIEW_TITLE_CUES", "PROCEDURE_QUESTION_CUES", "PROCEDURE_TEXT_CUES", "PROCEDURE_TITLE_CUES",
           "REFUSAL_CUES", "REFUSAL_WORDS", "RENAMING_WORDS", "SOURCE_NOUNS", "SOURCE_NOUNS_VI"]

# --------------------------------------------------------------- requests (accent-stripped)
# Words that make a request rather than name a relation or a type ("I would like to know ...",
# "Give ..., please").
REQUEST = ("tell", "give", "find", "please", "like", "know", "want", "wonder", "list", "show",
           "identify", "need", "provide", "say", "let", "look", "curious", "hay", "cho", "biet")
