"""Every metric card (metrics/*/README.md): its ``>>>`` examples run offline as
doctests, its sections come in evaluate's order, and its YAML front matter (the Space's
configuration) is the same on every card but the title and the description."""

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

#: the front matter every card shares, key for key (title and description are each card's own)
SHARED_METADATA = {
    "emoji": "🖼️", "colorFrom": "indigo", "colorTo": "pink", "sdk": "gradio", "python_version": "3.11",
    "app_file": "app.py", "pinned": False, "license": "apache-2.0", "tags": ["evaluate", "metric", "text-to-image"],
}
FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)
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


def front_matter(text: str) -> dict:
    import yaml

    m = FRONT_MATTER.match(text)
    assert m, "no YAML front matter (--- ... ---) at the top of the card"
    return yaml.safe_load(m.group(1))


def test_every_card_has_the_same_space_metadata():
    """One gradio version, one layout and one set of tags for every Space; the gradio version is the
    one the Space test installs (tests/test_spaces.py), and the template writes the same header."""
    from huggingface_hub import SpaceCard

    from t2ireason import build

    publish = _publish_spaces()
    metas = {card.parent.name: front_matter(card.read_text()) for card in CARDS}
    rendered = build.render_template(
        "metric_card.md.j2", title="Toy", description="Scores toy images against their toy prompts, one by one.", metric="toy", benchmark=None, how_to_use="",
        inputs=[], outputs=[], differences=[], limitations="", citation="", references=[])
    metas["(template)"] = front_matter(rendered)
    for name, meta in metas.items():
        assert set(meta) == {*SHARED_METADATA, "sdk_version", "title", "description"}, name
        assert {k: meta[k] for k in SHARED_METADATA} == SHARED_METADATA, name
        assert meta["sdk_version"] == publish.GRADIO_VERSION, name
        # evaluate's Space page shows the description: one whole sentence, never cut
        assert isinstance(meta["description"], str) and meta["description"].endswith("."), name
        assert 40 <= len(meta["description"]) <= 200, name
    for card in CARDS:
        data = SpaceCard(card.read_text()).data  # the Hub's own parser takes it
        assert data.sdk == "gradio" and data.app_file == "app.py" and data.title == metas[card.parent.name]["title"]
    assert len({m["title"] for m in metas.values()}) == len(metas)


def _publish_spaces():
    import importlib.util

    spec = importlib.util.spec_from_file_location("publish_spaces", ROOT / "metrics" / "publish_spaces.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
