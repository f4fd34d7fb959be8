"""Text as every part of ragkit reads it.

- ``tokens``: normalization (accents stripped), the tokenizers and stopword lists, and a
  corpus's language;
- ``sentences``: the one sentence splitter (evidence, answers and their claims, summaries);
- ``words``: the words of a text as the reader, the check and the evaluation compare them
  (``words``, ``plain``, ``stem``);
- ``question``: what a question's own grammar says (its language, the items it compares);
- ``cues``: the word lists that recognise kinds of text (refusals, negations, procedures,
  what a question asks for, what a spec section is about).

Everything ``tokens`` and ``sentences`` define is importable from ``ragkit.text`` itself.
"""

from .sentences import (ABBREVIATIONS, CITATION, LIST_MARKER, STEP_LABEL, WRAPPED_LINE, citations_only,
                        cut_to_length, first_sentences, sentence_spans, split_sentences)
from .tokens import (DEFAULT_SYNONYMS, ENGLISH_STOPWORDS, ENGLISH_WORD_SHARE, LANGUAGE_PRESENT, SAMPLE_CHARS,
                     SAMPLE_DOCS, VIETNAMESE_FUNCTION_WORDS, VIETNAMESE_LETTER_SHARE, LanguageChoice, Tokenizer,
                     _english_stemmer, apply_synonyms, choose_language, detect_language, document_language,
                     english_word_count, normalize, strip_accents, tokenize, tokenizer_for, vietnamese_char_count)

__all__ = ["ABBREVIATIONS", "CITATION", "DEFAULT_SYNONYMS", "ENGLISH_STOPWORDS", "ENGLISH_WORD_SHARE",
           "LANGUAGE_PRESENT", "LIST_MARKER", "SAMPLE_CHARS", "SAMPLE_DOCS", "STEP_LABEL", "VIETNAMESE_FUNCTION_WORDS",
           "VIETNAMESE_LETTER_SHARE", "WRAPPED_LINE", "LanguageChoice", "Tokenizer", "_english_stemmer",
           "apply_synonyms", "choose_language", "citations_only", "cut_to_length", "detect_language",
           "document_language", "english_word_count", "first_sentences", "normalize", "sentence_spans",
           "split_sentences", "strip_accents", "tokenize", "tokenizer_for", "vietnamese_char_count"]
