"""Prompt difficulty for MT2IE's difficulty-weighted scores (seed 002, section 6, appendix D).

The paper weights each prompt's score by its Yngve score, the depth of the
prompt's syntactic parse (Yngve, 1960). Computing it needs a constituency
parser: stanza's (the ``[mt2ie]`` extra, :mod:`t2ireason.difficulty_models`) or
any callable returning an ``nltk.Tree`` (or a tuple of them, one per sentence).
Without one, the other proxies of appendix D stand in: the word count, the
syllable count, the Flesch-Kincaid grade level and the perplexity under a
causal language model (a callable text -> perplexity, e.g.
:class:`t2ireason.difficulty_models.Perplexity`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["yngve_depth", "flesch_kincaid_grade", "word_count", "syllable_count", "prompt_difficulty", "METHODS",
           "PAPER_METHOD", "PERPLEXITY_PREFIX"]

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def word_count(text: str) -> int:
    return len(_words(text))


def yngve_depth(tree: Any, aggregate: str = "mean") -> float:
    """Yngve depth of a parse tree (an ``nltk.Tree`` or anything with the same shape), or of a prompt of several
    sentences given as a tuple of trees (one per sentence: its words' depths pooled, no sentence deeper for its place).

    Each node numbers its children from the right starting at 0; a word's depth
    is the sum of those numbers along its path from the root. The prompt's score
    is the mean over words (Roark et al., 2007) or, with ``aggregate="max"``, the maximum.
    """
    depths: list[int] = []
    trees = tree if isinstance(tree, tuple) else (tree,)

    def walk(node: Any, depth: int) -> None:
        children = list(node) if not isinstance(node, str) else []
        if not children:
            depths.append(depth)
            return
        n = len(children)
        for i, child in enumerate(children):
            walk(child, depth + (n - 1 - i))

    for t in trees:
        walk(t, 0)
    if not depths:
        raise ValueError("parse tree has no words")
    return float(max(depths)) if aggregate == "max" else sum(depths) / len(depths)


@lru_cache(maxsize=1)
def _hyphenator():
    import pyphen

    return pyphen.Pyphen(lang="en_US")


def _syllables(word: str) -> int:
    return max(1, len(_hyphenator().positions(word.lower())) + 1)


def syllable_count(text: str) -> int:
    """The prompt's syllables, from pyphen's hyphenation dictionary (as :func:`flesch_kincaid_grade` counts them)."""
    return sum(_syllables(w) for w in _words(text))


def flesch_kincaid_grade(text: str) -> float:
    """Flesch-Kincaid grade level: 0.39·words/sentences + 11.8·syllables/words − 15.59
    (syllables from pyphen's hyphenation dictionary; a prompt without an end mark is one sentence)."""
    words = _words(text)
    if not words:
        raise ValueError("cannot grade an empty prompt")
    sentences = max(1, len(re.findall(r"[.!?]+(?:\s|$)", text.strip())))
    syllables = sum(_syllables(w) for w in words)
    return 0.39 * len(words) / sentences + 11.8 * syllables / len(words) - 15.59


#: appendix D's proxies of a prompt's difficulty; the paper weights by the first (section 6)
METHODS = ("yngve", "word_count", "syllable_count", "flesch_kincaid", "perplexity")
PAPER_METHOD = "yngve"
#: appendix D: perplexity "was highly unstable ... Prepending 'There's an image of a' to the prompts stabilized" it
PERPLEXITY_PREFIX = "There's an image of a"


def prompt_difficulty(text: str, method: str = "yngve", parser: Callable[[str], Any] | None = None,
                      lm: Callable[[str], float] | None = None) -> float:
    """A prompt's difficulty by ``method``; ``yngve`` needs ``parser`` (text -> parse tree), ``perplexity`` needs
    ``lm`` (text -> its perplexity), which is given the prompt after :data:`PERPLEXITY_PREFIX` (appendix D)."""
    if method == "yngve":
        if parser is None:
            raise ValueError("Yngve difficulty needs a constituency parser (parser=...; pip install "
                             "'t2ireason[mt2ie]' for stanza's); or use another method: " + ", ".join(METHODS[1:]))
        return yngve_depth(parser(text))
    if method == "perplexity":
        if lm is None:
            raise ValueError("perplexity difficulty needs a causal language model (lm=...)")
        return float(lm(f"{PERPLEXITY_PREFIX} {text.strip()}"))
    if method == "flesch_kincaid":
        return flesch_kincaid_grade(text)
    if method == "word_count":
        return float(word_count(text))
    if method == "syllable_count":
        return float(syllable_count(text))
    raise ValueError(f"unknown difficulty method {method!r}; known: {', '.join(METHODS)}")
