"""MT2IE's difficulty as the paper weights it (seed 002, section 6) and appendix D's other proxies: the Yngve depth
by stanza's parser (the [mt2ie] extra) or one given, said at the run's start and in every row and in the report when
a proxy stands in for it, and the perplexity under a causal LM."""

from __future__ import annotations

import argparse
import json
import math
import sys
import types

import pytest

from t2ireason import difficulty_models
from t2ireason.benchmarks.mt2ie import BENCHMARK
from t2ireason.benchmarks.mt2ie.agent import resolve_difficulty
from t2ireason.benchmarks.mt2ie.rankings import paper_tables
from t2ireason.commands.mt2ie import add_mt2ie_args
from t2ireason.difficulty import PERPLEXITY_PREFIX, prompt_difficulty, syllable_count, yngve_depth
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.mt2ie import rank_models, run_mt2ie


class Node:
    """A stanza constituency tree's shape: ``label`` and ``children`` (a word is a node without children)."""

    def __init__(self, label, *children):
        self.label, self.children = label, tuple(children)


def pos(tag, word):
    return Node(tag, Node(word))


#: (ROOT (NP (NP (DT a) (NN dog)) (PP (IN on) (NP (DT a) (NN mat))))): Yngve depths a 2, dog 1, on 1, a 1, mat 0
DOG_ON_MAT = Node("ROOT", Node("NP", Node("NP", pos("DT", "a"), pos("NN", "dog")),
                               Node("PP", pos("IN", "on"), Node("NP", pos("DT", "a"), pos("NN", "mat")))))


@pytest.fixture
def no_stanza(monkeypatch):
    """The [mt2ie] extra not installed: ``import stanza`` fails."""
    monkeypatch.setitem(sys.modules, "stanza", None)
    difficulty_models._default.cache_clear()
    yield
    difficulty_models._default.cache_clear()


@pytest.fixture
def fake_stanza(monkeypatch):
    """A stanza whose English pipeline parses each sentence of a text as stanza's trees come (label, children)."""
    made = []

    class Pipeline:
        def __init__(self, **kwargs):
            made.append(kwargs)

        def __call__(self, text):
            sentences = [s for s in text.split(". ") if s]
            return types.SimpleNamespace(sentences=[types.SimpleNamespace(constituency=DOG_ON_MAT)
                                                    for _ in sentences])

    monkeypatch.setitem(sys.modules, "stanza", types.SimpleNamespace(Pipeline=Pipeline))
    difficulty_models._default.cache_clear()
    yield made
    difficulty_models._default.cache_clear()


def drawer(prompts, seeds):
    from PIL import Image

    return [Image.new("RGB", (8, 8), (len(p) % 251, s % 251, 0)) for p, s in zip(prompts, seeds)]


def test_the_help_shows_yngve_as_the_default():
    p = argparse.ArgumentParser(prog="t2ireason mt2ie")
    add_mt2ie_args(p)
    text = " ".join(p.format_help().split())
    assert "(default: auto = yngve, the paper's Yngve depth of the prompt's parse" in text
    assert "stanza's parser from the [mt2ie] extra" in text and "--perplexity-model MODEL" in text


def test_auto_is_yngve_by_stanzas_parser_when_the_extra_is_installed(fake_stanza, monkeypatch):
    monkeypatch.setenv("STANZA_RESOURCES_DIR", "/models/stanza")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    method, parser, lm, note = resolve_difficulty("auto")
    assert (method, note, lm) == ("yngve", None, None) and parser is difficulty_models.stanza_parser
    assert fake_stanza == [{"lang": "en", "processors": "tokenize,pos,constituency", "verbose": False,
                            "download_method": "reuse_resources", "dir": "/models/stanza"}]
    assert prompt_difficulty("a dog on a mat", "yngve", parser) == pytest.approx(5 / 5)
    # two sentences: their words' depths pooled, neither deeper for its place
    assert prompt_difficulty("a dog on a mat. a dog on a mat", "yngve", parser) == pytest.approx(1.0)
    assert resolve_difficulty("yngve")[:2] == ("yngve", difficulty_models.stanza_parser)


def test_offline_stanza_reads_its_models_and_never_downloads(fake_stanza, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("STANZA_RESOURCES_DIR", raising=False)
    difficulty_models.load_stanza_parser()
    assert fake_stanza[-1]["download_method"] is None and "dir" not in fake_stanza[-1]


def test_a_real_stanza_tree_is_read_as_its_parse():
    """stanza's own Tree (where the [mt2ie] extra is installed; its models are not needed to read a tree)."""
    reader = pytest.importorskip("stanza.models.constituency.tree_reader")
    parsed = reader.read_trees("(ROOT (NP (NP (DT a) (NN dog)) (PP (IN on) (NP (DT a) (NN mat)))))")[0]
    assert difficulty_models.stanza_tree(parsed) == difficulty_models.stanza_tree(DOG_ON_MAT)
    assert yngve_depth(difficulty_models.stanza_tree(parsed)) == pytest.approx(1.0)


def test_stanza_trees_become_the_shape_yngve_walks():
    from nltk import Tree

    assert difficulty_models.stanza_tree(DOG_ON_MAT) == [[[["a"], ["dog"]], [["on"], [["a"], ["mat"]]]]]
    nltk_tree = Tree.fromstring("(ROOT (NP (NP (DT a) (NN dog)) (PP (IN on) (NP (DT a) (NN mat)))))")
    assert yngve_depth(difficulty_models.stanza_tree(DOG_ON_MAT)) == yngve_depth(nltk_tree) == 1.0
    assert yngve_depth(difficulty_models.stanza_tree(DOG_ON_MAT), "max") == 2.0


def test_without_a_parser_auto_says_it_is_not_the_papers_weight(no_stanza):
    method, parser, _, note = resolve_difficulty("auto")
    assert (method, parser) == ("word_count", None)
    assert note.startswith("MT2IE cannot compute the paper's difficulty weight (Yngve depth, section 6): no "
                           "constituency parser is installed (pip install 't2ireason[mt2ie]'")
    with pytest.raises(ValueError, match="Yngve difficulty needs a constituency parser: no constituency parser"):
        resolve_difficulty("yngve")
    given = resolve_difficulty("auto", parser=lambda text: "a")  # a parser given: the paper's weight, no note
    assert given[0] == "yngve" and given[3] is None


def test_appendix_d_proxies():
    assert syllable_count("a beautiful butterfly") == 1 + 3 + 3
    assert prompt_difficulty("a beautiful butterfly", "syllable_count") == 7.0
    seen = []
    assert prompt_difficulty("red ball", "perplexity", lm=lambda t: seen.append(t) or 12.5) == 12.5
    assert seen == [f"{PERPLEXITY_PREFIX} red ball"] == ["There's an image of a red ball"]
    with pytest.raises(ValueError, match="perplexity difficulty needs a causal language model"):
        prompt_difficulty("red ball", "perplexity")
    with pytest.raises(ValueError, match="perplexity difficulty needs a causal language model"):
        resolve_difficulty("perplexity")


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from t2ireason.testing import build_tiny_lm

    return build_tiny_lm(tmp_path_factory.mktemp("lm") / "lm")


def test_perplexity_under_a_causal_lm_loaded_with_from_pretrained(tiny_lm):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    lm = difficulty_models.Perplexity(str(tiny_lm))
    text = "There's an image of a red ball"
    tokenizer, model = AutoTokenizer.from_pretrained(tiny_lm), AutoModelForCausalLM.from_pretrained(tiny_lm)
    ids = tokenizer(text, return_tensors="pt").input_ids[0]
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids[None]).logits[0], -1)
    nll = -sum(logp[i - 1, ids[i]].item() for i in range(1, len(ids))) / (len(ids) - 1)  # each token after those before
    assert lm(text) == pytest.approx(math.exp(nll), rel=1e-5)
    assert 1 < lm(text) < 2 * len(tokenizer)  # a random model: about as perplexed as its vocabulary is large
    assert lm(text) != lm("There's an image of a cat")


def test_a_run_weighted_by_perplexity_records_its_model(tiny_lm, tmp_path):
    judge = ScriptedJudge(lambda r: "Prompt: a dog", probabilities=lambda q: 0.5)
    run_mt2ie({"m": drawer}, judge, [{"id": "s1", "category": "animals", "prompt": "a dog"}], out_dir=tmp_path,
              iterations=1, seeds=[0], difficulty="perplexity", lm=str(tiny_lm), progress=False)
    row = BENCHMARK.read_release(tmp_path).configs["runs"][0]
    expected = difficulty_models.Perplexity(str(tiny_lm))("There's an image of a a dog")
    assert (row["difficulty_method"], row["difficulty"]) == ("perplexity", pytest.approx(expected, rel=1e-5))
    assert json.loads((tmp_path / "settings.json").read_text())["perplexity_model"] == f"Perplexity('{tiny_lm}')"


def test_a_run_without_a_parser_says_so_at_its_start_in_every_row_and_in_the_report(no_stanza, tmp_path, capsys,
                                                                                    monkeypatch):
    from t2ireason import cli
    from t2ireason.testing_http import Answer, serve

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t2i_grey.py").write_text("from PIL import Image\n"
                                          "def grey(prompts, seeds):\n    return [Image.new('RGB', (8, 8), (99,) * 3) "
                                          "for _ in prompts]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    pool = tmp_path / "seed_prompts.jsonl"
    pool.write_text(json.dumps({"id": "s1", "category": "animals", "prompt": "a dog on a mat"}) + "\n")

    def answer(request):
        if request.body.get("logprobs"):
            return Answer("Yes", top_logprobs=[{"Yes": math.log(0.9), "No": math.log(0.1)}])
        return Answer("Prompt: a dog on a red mat")

    with serve(answer) as server:
        argv = ["mt2ie", "--model", "grey=python:t2i_grey:grey", "--judge", f"openai:llava@{server.base_url}",
                "--mode", "adaptive", "--iterations", "2", "--seeds", "0", "--seed-prompts", str(pool),
                "--seed-prompts-per-seed", "1", "--no-cache", "--out", str(tmp_path / "out"), "--no-progress"]
        assert cli.main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("MT2IE cannot compute the paper's difficulty weight (Yngve depth, section 6): no "
                            "constituency parser is installed")
    rows = BENCHMARK.read_release(tmp_path / "out").configs["runs"]
    assert [(r["difficulty_method"], r["difficulty"]) for r in rows] == [("word_count", 5.0), ("word_count", 6.0)]
    assert cli.main(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "tables.md").read_text()
    assert ("prompt difficulty (the weight of each score): word_count; word_count is not the paper's Yngve depth "
            "(section 6): not the paper's protocol") in md


def test_the_ranking_says_when_its_weight_is_the_papers():
    rows = [{"model": m, "seed": 0, "mode": "adaptive", "iteration": 0, "score": s, "difficulty": 1.0,
             "weighted_score": s, "difficulty_method": "yngve"} for m, s in (("a", 0.9), ("b", 0.4))]
    note = paper_tables(rank_models(rows), "")[0].note
    assert "prompt difficulty (the weight of each score): Yngve depth, the paper's" in note
    assert "not the paper's" not in note
