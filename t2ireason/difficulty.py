"""Prompt difficulty for MT2IE's difficulty-weighted scores (seed 002, section 6, appendix D).

The paper weights each prompt's score by its Yngve score, the depth of the
prompt's syntactic parse (Yngve, 1960). Computing it needs a constituency
parser; none ships with a pip package that works offline, so a parser is
plugged in (any callable returning an ``nltk.Tree``, e.g. benepar where its
model is installed). Without one, the documented fallbacks are the
Flesch-Kincaid grade level and the word count, the other proxies of appendix D.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["yngve_depth", "flesch_kincaid_grade", "word_count", "prompt_difficulty", "METHODS"]

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def word_count(text: str) -> int:
    return len(_words(text))


def yngve_depth(tree: Any, aggregate: str = "mean") -> float:
    """Yngve depth of a parse tree (an ``nltk.Tree`` or anything with the same shape).

    Each node numbers its children from the right starting at 0; a word's depth
    is the sum of those numbers along its path from the root. The prompt's score
    is the mean over words (Roark et al., 2007) or, with ``aggregate="max"``, the maximum.
    """
    depths: list[int] = []

    def walk(node: Any, depth: int) -> None:
        children = list(node) if not isinstance(node, str) else []
        if not children:
            depths.append(depth)
            return
        n = len(children)
        for i, child in enumerate(children):
            walk(child, depth + (n - 1 - i))

    walk(tree, 0)
    if not depths:
        raise ValueError("parse tree has no words")
    return float(max(depths)) if aggregate == "max" else sum(depths) / len(depths)


@lru_cache(maxsize=1)
def _hyphenator():
    import pyphen

    return pyphen.Pyphen(lang="en_US")


def _syllables(word: str) -> int:
    return max(1, len(_hyphenator().positions(word.lower())) + 1)


def flesch_kincaid_grade(text: str) -> float:
    """Flesch-Kincaid grade level: 0.39·words/sentences + 11.8·syllables/words − 15.59
    (syllables from pyphen's hyphenation dictionary; a prompt without an end mark is one sentence)."""
    words = _words(text)
    if not words:
        raise ValueError("cannot grade an empty prompt")
    sentences = max(1, len(re.findall(r"[.!?]+(?:\s|$)", text.strip())))
    syllables = sum(_syllables(w) for w in words)
    return 0.39 * len(words) / sentences + 11.8 * syllables / len(words) - 15.59


METHODS = ("yngve", "flesch_kincaid", "word_count")


def prompt_difficulty(text: str, method: str = "yngve", parser: Callable[[str], Any] | None = None) -> float:
    """A prompt's difficulty by ``method``; ``yngve`` needs ``parser`` (text -> parse tree)."""
    if method == "yngve":
        if parser is None:
            raise ValueError("Yngve difficulty needs a constituency parser (parser=...); "
                             "use method='flesch_kincaid' or 'word_count' without one")
        return yngve_depth(parser(text))
    if method == "flesch_kincaid":
        return flesch_kincaid_grade(text)
    if method == "word_count":
        return float(word_count(text))
    raise ValueError(f"unknown difficulty method {method!r}; known: {', '.join(METHODS)}")
