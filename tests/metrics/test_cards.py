"""Every metric card (metrics/*/README.md): its ``>>>`` examples run offline as
doctests, and its sections come in evaluate's order."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CARDS = sorted(ROOT.glob("metrics/*/README.md"))

#: evaluate's card order; each entry matches a heading flexibly ("Metric Description", "Citation(s)"...)
SECTIONS = [
    ("Description", r"description"),
    ("How to Use", r"how to use|usage"),
    ("Inputs", r"inputs?"),
    ("Output Values", r"output"),
    ("Limitations and Bias", r"limitation"),
    ("Citation", r"citation"),
]

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def card_doctest(path: Path) -> doctest.DocTest:
    """One doctest of all the fenced blocks holding ``>>>`` examples (sharing globals, in order)."""
    text = path.read_text()
    blocks = [m.group(1) for m in FENCE.finditer(text) if ">>>" in m.group(1)]
    return doctest.DocTestParser().get_doctest("\n".join(blocks), {}, path.parent.name, str(path), 0)


def headings(text: str) -> list[str]:
    text = FENCE.sub("", text)  # a '#' inside a code block is not a heading
    return [m.group(1).strip() for m in re.finditer(r"^#{2,4}\s+(.+)$", text, re.M)]


def test_cards_are_collected():
    assert {"vqascore", "clip_score", "meta_evaluation"} <= {p.parent.name for p in CARDS}


@pytest.mark.parametrize("card", CARDS, ids=[p.parent.name for p in CARDS])
def test_card_sections_in_evaluate_order(card):
    found = headings(card.read_text())
    positions = []
    for name, pattern in SECTIONS:
        hits = [i for i, h in enumerate(found) if re.search(pattern, h, re.I)]
        assert hits, f"{card} has no {name!r} section; headings: {found}"
        positions.append(hits[0])
    order = [name for _, name in sorted(zip(positions, [n for n, _ in SECTIONS]))]
    assert positions == sorted(positions), f"{card}: sections in order {order}, expected {[n for n, _ in SECTIONS]}"


@pytest.mark.slow
@pytest.mark.parametrize("card", CARDS, ids=[p.parent.name for p in CARDS])
def test_card_examples_run(card, monkeypatch):
    test = card_doctest(card)
    assert test.examples, f"{card} has no >>> example"
    monkeypatch.chdir(ROOT)  # the cards load "metrics/<name>" from a checkout
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    result = runner.run(test, out=out.append)
    assert result.failed == 0, "".join(out)


def test_heading_parser_ignores_code_and_finds_flexible_names(tmp_path):
    card = tmp_path / "README.md"
    card.write_text("# Metric Card\n## Metric Description\n```\n## Citation\n>>> 1 + 1\n2\n```\n## How to Use\n")
    assert headings(card.read_text()) == ["Metric Description", "How to Use"]
    assert [e.source for e in card_doctest(card).examples] == ["1 + 1\n"]
