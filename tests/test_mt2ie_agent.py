"""The MT2IE agent (seed 002): prompt chains, adaptive bins, scoring, failures, resuming, rankings, CLI glue."""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image

from t2ireason import build
from t2ireason.benchmarks.mt2ie import BENCHMARK, RUN_FEATURES
from t2ireason.commands.mt2ie import add_mt2ie_args, run_mt2ie_command
from t2ireason.generation import image_seed
from t2ireason.judges import JudgeError, load_judge
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.mt2ie import (
    BINS,
    PAPER_JUDGE,
    adaptive_bin,
    parse_aesthetic,
    parse_choice,
    parse_prompt,
    parse_questions,
    parse_yes_no,
    rank_models,
    run_mt2ie,
    select_seed_prompts,
)
from t2ireason.parsing import ReplyParseError
from t2ireason.prompts import render

ROOT = Path(__file__).resolve().parents[1]
#: system prompt -> bin; the [0.6, 0.8) prompt (Figure 19) is word for word the iterative one (Figure 16)
TEMPLATE_BIN = {render("mt2ie", f"adaptive_{b}"): b for b in BINS}
CONCEPTS = ["a red ball", "a green chair", "a yellow lamp", "a white cup", "a black hat"]


def seeds(*prompts):
    return [{"id": f"s{k}", "category": "animals", "prompt": p} for k, p in enumerate(prompts, 1)]


def previous(request) -> str:
    """The existing prompt a prompt-writing request is about (also in a re-asked conversation)."""
    first = next(m.text for m in request.messages if m.role == "user")
    return re.fullmatch(r'Existing prompt: "(.*)"', first).group(1)


def drawer(prompts, seeds_):
    """Pixels that depend on the prompt and the seed only (where pixels do not matter)."""
    return [Image.new("RGB", (8, 8), (s % 251, len(p) % 251, sum(map(ord, p)) % 251)) for p, s in zip(prompts, seeds_)]


def add_concept(request) -> str:
    """Iterative writer: one more concept per iteration, as the paper's Figure 16 asks."""
    prev = previous(request)
    return f"Prompt: {prev}, with {CONCEPTS[prev.count(',')]}"


def by_concepts(query) -> float:
    return round(0.9 - 0.2 * query.question.count(","), 6)


def test_adaptive_bins_are_appendix_f_bins():
    cases = {0.0: "halve", 0.2: "halve", 0.2001: "reduce", 0.4: "reduce", 0.41: "rephrase", 0.59: "rephrase",
             0.6: "increase", 0.79: "increase", 0.8: "increase_more", 1.0: "increase_more"}
    assert {s: adaptive_bin(s) for s in cases} == cases
    for bad in (-0.1, 1.1, float("nan")):
        with pytest.raises(ValueError):
            adaptive_bin(bad)


def test_adaptive_run_sends_each_bins_template_and_moves_the_prompt(tmp_path):
    edits = {"halve": lambda w: w[: len(w) // 2], "reduce": lambda w: w[:-2], "rephrase": lambda w: w[::-1],
             "increase": lambda w: w + ["red"], "increase_more": lambda w: w + ["red", "big", "dog"]}

    def rewrite(request):
        words = previous(request).split()
        return "Prompt: " + " ".join(edits[TEMPLATE_BIN[request.messages[0].text]](words))

    judge = ScriptedJudge(rewrite, probabilities=[0.1, 0.3, 0.5, 0.7, 0.9, 0.95])
    seed_prompt = "a brown dog and a black cat sleeping on a blue rug"
    summary = run_mt2ie({"m": drawer}, judge, seeds(seed_prompt), out_dir=tmp_path, mode="adaptive",
                        iterations=6, seeds=[0], progress=False)
    rows = BENCHMARK.read_release(tmp_path).configs["runs"]
    assert [r["adaptive_bin"] for r in rows] == [None, *BINS]
    # the request of each bin carries that bin's verbatim system prompt and the previous prompt
    assert [r.messages[0].text for r in judge.requests] == [render("mt2ie", f"adaptive_{b}") for b in BINS]
    assert [r.messages[0].role for r in judge.requests] == ["system"] * 5
    assert [previous(q) for q in judge.requests] == [r["prompt"] for r in rows[:-1]]
    assert {q.sampling.temperature for q in judge.requests} == {0.3}
    # halve 12 -> 6 words, reduce -> 4, rephrase keeps 4, increase -> 5, increase more -> 8
    assert [r["difficulty"] for r in rows] == [12, 6, 4, 4, 5, 8]
    assert [r["difficulty_method"] for r in rows] == ["word_count"] * 6
    assert [r["score"] for r in rows] == pytest.approx([0.1, 0.3, 0.5, 0.7, 0.9, 0.95])
    assert [r["weighted_score"] for r in rows] == pytest.approx([1.2, 1.8, 2.0, 2.8, 4.5, 7.6])
    assert summary["table"]["metric"] == "weighted_score"
    assert summary["table"]["models"]["m"]["mean"] == pytest.approx(19.9 / 6)


def test_iterative_mode_adds_one_concept_per_iteration_for_every_model(tmp_path):
    judge = ScriptedJudge(add_concept, probabilities=by_concepts)
    pool = seeds("a dog on a rug", "a cat on a sofa")
    summary = run_mt2ie({"a": drawer, "b": drawer}, judge, pool, out_dir=tmp_path, seeds=[3],
                        seed_prompts_per_seed=2, progress=False)
    assert summary["planned"] == summary["rows"] == 2 * 2 * 5 and summary["failed"] == 0
    rows = BENCHMARK.read_release(tmp_path).configs["runs"]
    # one chain per seed prompt, written once (4 new prompts each) and shared by both models
    assert len(judge.requests) == 2 * 4
    assert {r.messages[0].text for r in judge.requests} == {render("mt2ie", "iterative")}
    assert render("mt2ie", "iterative") == render("mt2ie", "adaptive_increase")  # as the paper prints them
    for sp in pool:
        chain = [r["prompt"] for r in rows if r["model"] == "a" and r["seed_prompt_id"] == sp["id"]]
        assert chain == [sp["prompt"] + "".join(f", with {c}" for c in CONCEPTS[:i]) for i in range(5)]
        assert chain == [r["prompt"] for r in rows if r["model"] == "b" and r["seed_prompt_id"] == sp["id"]]
    for r in rows:
        assert r["run_id"] == f"{r['model']}/iterative/seed3/{r['seed_prompt_id']}"
        assert r["image_seed"] == image_seed("mt2ie", r["run_id"], r["iteration"])
        assert r["score"] == pytest.approx(0.9 - 0.2 * r["iteration"]) and r["adaptive_bin"] is None
        assert r["judge_replies"] == ([] if r["iteration"] == 0 else [f"Prompt: {r['prompt']}"])
    assert len({r["image_seed"] for r in rows}) == len(rows)
    per_iteration = summary["table"]["per_iteration"]["a"]
    assert [per_iteration[i]["score"] for i in range(5)] == pytest.approx([0.9, 0.7, 0.5, 0.3, 0.1])
    assert [per_iteration[i]["difficulty"] for i in range(5)] == [5, 9, 13, 17, 21]  # 4 words a concept


def _rows(mode, table):
    """Run rows from {(model, seed): [(score, difficulty), ...]}."""
    return [{"model": m, "seed": s, "mode": mode, "iteration": i, "score": sc, "difficulty": d,
             "weighted_score": None if sc is None else sc * d, "aesthetic": None}
            for (m, s), items in table.items() for i, (sc, d) in enumerate(items)]


def test_scores_ranks_and_kendall_tau_by_hand():
    rows = _rows("iterative", {
        ("A", 0): [(0.8, 1), (0.6, 1)], ("A", 1): [(0.5, 1), (0.5, 1)],
        ("B", 0): [(0.9, 1), (0.7, 1)], ("B", 1): [(0.2, 1), (None, 1)],  # a failure: left out, counted
        ("C", 0): [(0.1, 1), (0.3, 1)], ("C", 1): [(0.4, 1), (0.4, 1)],
    })
    table = rank_models(rows, reference=["A", "C", "B"])
    a, b, c = (table["models"][m] for m in "ABC")
    # per seed: seed 0 B 0.8 > A 0.7 > C 0.2; seed 1 A 0.5 > C 0.4 > B 0.2
    assert b["per_seed"] == pytest.approx({0: 0.8, 1: 0.2}) and b["ranks"] == {0: 1.0, 1: 3.0}
    assert (a["mean"], a["std"], a["mean_rank"], a["rank_variance"]) == pytest.approx((0.6, 0.1, 1.5, 0.25))
    assert (b["mean"], b["std"], b["mean_rank"], b["rank_variance"]) == pytest.approx((0.5, 0.3, 2.0, 1.0))
    assert (c["mean"], c["std"], c["mean_rank"], c["rank_variance"]) == pytest.approx((0.3, 0.1, 2.5, 0.25))
    assert (b["n"], b["failed"], a["failed"]) == (3, 1, 0)
    assert table["ranking"] == ["A", "B", "C"] and table["metric"] == "score"
    # mean ranks A < B < C vs reference A, C, B: pairs AB, AC agree, BC disagree -> (2 - 1) / 3
    assert table["kendall_tau"] == pytest.approx(1 / 3)
    # per seed: B, A, C -> (1 - 2) / 3; A, C, B -> 1
    assert table["kendall_tau_per_seed"] == pytest.approx({0: -1 / 3, 1: 1.0})
    assert table["kendall_tau_seed_mean"] == pytest.approx(1 / 3)
    # a reference given as scores (higher is better) is the same reference
    assert rank_models(rows, reference={"A": 0.9, "C": 0.5, "B": 0.1})["kendall_tau"] == pytest.approx(1 / 3)
    # appendix G's ablation: the first prompt of each run only
    first = rank_models(rows, iterations=1)
    assert first["models"]["B"]["per_seed"] == pytest.approx({0: 0.9, 1: 0.2}) and first["models"]["B"]["failed"] == 0


def test_adaptive_ranks_by_difficulty_weighted_scores_with_ties():
    rows = _rows("adaptive", {
        ("easy", 0): [(0.9, 1), (0.9, 1)],  # high scores on easy prompts: 0.9
        ("hard", 0): [(0.5, 4), (1.0, 2)],  # lower scores on harder prompts: (2 + 2) / 2 = 2
        ("same", 0): [(0.45, 2), (0.45, 2)],
    })
    table = rank_models(rows)
    assert table["metric"] == "weighted_score"
    assert {m: s["mean"] for m, s in table["models"].items()} == pytest.approx({"easy": 0.9, "hard": 2.0, "same": 0.9})
    assert {m: s["ranks"][0] for m, s in table["models"].items()} == {"hard": 1.0, "easy": 2.5, "same": 2.5}
    assert rank_models(rows, metric="score")["ranking"][0] == "easy"
    with pytest.raises(ValueError, match="several modes"):
        rank_models(rows + _rows("iterative", {("x", 0): [(0.1, 1)]}))
    with pytest.raises(ValueError, match="at least two ranked models"):
        rank_models(rows, reference=["hard", "nobody"])
    with pytest.warns(UserWarning, match="difficulties are <= 0"):
        rank_models(_rows("adaptive", {("x", 0): [(0.5, -2.6)]}))


def test_malformed_prompts_are_reasked_then_recorded_and_stop_the_chain(tmp_path):
    asked = {}

    def writer(request):
        prev = previous(request)
        asked[prev] = asked.get(prev, 0) + 1
        if prev.startswith("a blue cup"):
            return "I would rather not.\nSorry."  # never parses
        return "Here is my idea:\nI added a cat." if asked[prev] == 1 else f"Prompt: {prev} and a cat"

    judge = ScriptedJudge(writer, probabilities=lambda q: 0.5)
    summary = run_mt2ie({"m": drawer}, judge, seeds("a red ball", "a blue cup"), out_dir=tmp_path, iterations=3,
                        seeds=[0], seed_prompts_per_seed=2, progress=False)
    rows = {r["id"]: r for r in BENCHMARK.read_release(tmp_path).configs["runs"]}
    ok = rows["m/iterative/seed0/s1/1"]
    assert ok["prompt"] == "a red ball and a cat" and ok["failure"] is None
    assert ok["judge_replies"] == ["Here is my idea:\nI added a cat.", "Prompt: a red ball and a cat"]
    reask = next(r for r in judge.requests if len(r.messages) > 2)
    assert "could not be used" in reask.messages[-1].text and 'no "Prompt:" line' in reask.messages[-1].text
    bad = rows["m/iterative/seed0/s2/1"]
    assert bad["prompt"] == "" and bad["score"] is None and bad["image"] is None
    assert bad["failure"].startswith("prompt writing failed: unparsable reply")
    assert bad["judge_replies"] == ["I would rather not.\nSorry."] * 3  # asked, then re-asked twice
    assert "m/iterative/seed0/s2/2" not in rows  # nothing to build on: the chain stops
    assert rows["m/iterative/seed0/s1/2"]["prompt"] == "a red ball and a cat and a cat"
    assert (summary["failed"], summary["stopped"], summary["rows"]) == (1, 1, 5)
    assert summary["table"]["models"]["m"]["failed"] == 1


@pytest.mark.parametrize("mode", ["iterative", "adaptive"])
def test_failed_draws_and_scores_are_rows_not_zeros(tmp_path, mode):
    def fragile(prompts, seeds_):
        if any(p.startswith("a cat") for p in prompts):
            raise RuntimeError("out of memory")
        return drawer(prompts, seeds_)

    def probability(query):
        if "sofa" in query.question:
            raise JudgeError("the server hung up")
        return 0.9

    judge = ScriptedJudge(lambda r: f"Prompt: {previous(r)} with a cat" if "cat" not in previous(r)
                          else f"Prompt: {previous(r)} and a hat", probabilities=probability)
    summary = run_mt2ie({"m": fragile}, judge, seeds("a dog", "a cat", "a sofa"), out_dir=tmp_path,
                        mode=mode, iterations=3, seeds=[0], seed_prompts_per_seed=3, progress=False)
    rows = {(r["seed_prompt_id"], r["iteration"]): r for r in BENCHMARK.read_release(tmp_path).configs["runs"]}
    # in one batch with drawable prompts: the others are still drawn and scored
    assert rows[("s1", 0)]["score"] == 0.9 and rows[("s1", 0)]["image"]
    cat = rows[("s2", 0)]
    assert cat["score"] is None and cat["image"] is None and cat["weighted_score"] is None
    assert cat["failure"] == "drawing failed: RuntimeError: out of memory"
    assert cat["difficulty"] == 2  # the prompt is still described
    sofa = rows[("s3", 0)]
    assert sofa["image"] and sofa["score"] is None
    assert sofa["failure"] == "VQAScore failed: JudgeError: the server hung up"
    if mode == "iterative":  # the prompts do not need the images: the chains go on
        assert len(rows) == 9 and rows[("s2", 2)]["prompt"] == "a cat and a hat and a hat"
    else:  # the next prompt follows the score: a chain without one stops
        assert ("s2", 1) not in rows and ("s3", 1) not in rows and summary["stopped"] == 4
        assert rows[("s1", 1)]["adaptive_bin"] == "increase_more"


def test_vqa_accuracy_generates_validates_and_answers_questions(tmp_path):
    questions = ("Q: Is there a ball?\nChoices: yes, no\nA: yes\nQ: What color is the ball?\n"
                 "Choices: red, blue, green\nA: red\nQ: Is the ball on a table?\nChoices: yes, no\nA: yes")
    answers = {"Is there a ball?": ["Yes."], "What color is the ball?": ["It is purple.", "blue"]}

    def judge_reply(request):
        first = request.messages[0].text  # a re-ask continues the conversation: look at its start
        if first == render("mt2ie", "question_generation"):
            return questions if request.messages[1].text == "Image description: a red ball" else "I see no questions."
        if first.startswith("Given this image caption"):
            return "No" if "table" in first else "Yes"
        question = first.splitlines()[0]
        return answers[question].pop(0) if len(answers[question]) > 1 else answers[question][0]

    judge = ScriptedJudge(judge_reply)
    summary = run_mt2ie({"m": drawer}, judge, seeds("a red ball", "a green box"), out_dir=tmp_path,
                        iterations=1, seeds=[0], seed_prompts_per_seed=2, scoring="vqa_accuracy", progress=False)
    rows = {r["seed_prompt_id"]: r for r in BENCHMARK.read_release(tmp_path).configs["runs"]}
    # 3 questions, "on a table" fails validation; "yes" right, "blue" wrong (after a re-ask) -> 1 / 2
    assert rows["s1"]["score"] == 0.5 and rows["s1"]["failure"] is None
    assert rows["s1"]["judge_replies"] == [questions, "Yes", "Yes", "No", "Yes.", "It is purple.", "blue"]
    validation = [r for r in judge.requests if r.messages[-1].text.startswith("Given this image caption")]
    assert validation[1].messages[-1].text == render("mt2ie", "question_validation", prompt="a red ball",
                                                     question="What color is the ball?")
    answering = [r for r in judge.requests if r.images]
    assert len(answering) == 3 and answering[0].messages[-1].text == render(
        "mt2ie", "question_answering", question="Is there a ball?", choices="yes, no")
    assert answering[0].images[0] is answering[1].images[0]  # one JudgeImage per image
    assert rows["s2"]["score"] is None
    assert rows["s2"]["failure"].startswith("VQA accuracy failed: question generation: unparsable reply")
    assert rows["s2"]["judge_replies"] == ["I see no questions."] * 3
    assert summary["failed"] == 1


def test_aesthetic_scores_and_yngve_difficulty(tmp_path):
    from nltk import Tree

    def judge_reply(request):
        assert request.messages[0].text == render("mt2ie", "aesthetic_system")
        assert request.messages[-1].text == render("mt2ie", "aesthetic_user") and len(request.images) == 1
        return "Score: 7/10"

    def parser(text):
        if text != "a dog":
            raise ValueError("no parse")
        return Tree.fromstring("(NP (DT a) (NN dog))")  # Yngve depths 1 and 0

    judge = ScriptedJudge(judge_reply, probabilities=lambda q: 0.4)
    summary = run_mt2ie({"m": drawer}, judge, seeds("a dog", "dog dog dog"), out_dir=tmp_path, iterations=1,
                        seeds=[0, 1], aesthetic=True, parser=parser, progress=False)
    rows = BENCHMARK.read_release(tmp_path).configs["runs"]
    dog = [r for r in rows if r["prompt"] == "a dog"]
    assert [(r["aesthetic"], r["score"], r["difficulty"], r["weighted_score"], r["difficulty_method"])
            for r in dog] == [(7.0, 0.4, 0.5, 0.2, "yngve")] * 2
    assert dog[0]["judge_replies"] == ["Score: 7/10"] and dog[0]["failure"] is None
    unparsed = next(r for r in rows if r["prompt"] == "dog dog dog")  # scored, but not weighted
    assert (unparsed["score"], unparsed["difficulty"], unparsed["weighted_score"]) == (0.4, None, None)
    assert unparsed["failure"] == "difficulty failed: ValueError: no parse" and summary["failed"] == 2
    assert rank_models(rows, metric="aesthetic")["models"]["m"]["mean"] == 7.0


def test_seed_prompts_one_per_category_by_seed():
    pool = BENCHMARK.read_seed_prompts(BENCHMARK.sample_path())
    picks = {s: select_seed_prompts(pool, s, 4) for s in range(5)}
    for chosen in picks.values():
        assert [p["category"] for p in chosen] == ["household scenes", "people", "animals", "locations"]
    assert select_seed_prompts(pool, 3, 4) == picks[3]  # from the seed alone
    assert len({tuple(p["id"] for p in c) for c in picks.values()}) > 1
    assert select_seed_prompts(pool, 0, 99) == pool


def test_parsers():
    assert parse_prompt('Prompt: "a cat on a mat"') == "a cat on a mat"
    assert parse_prompt('Existing prompt: "a cat"\nPrompt: a cat on a mat\n') == "a cat on a mat"
    assert parse_prompt("a cat on a mat") == "a cat on a mat"
    for bad in ("Prompt:", "Sure.\nHere it is.", ""):
        with pytest.raises(ReplyParseError):
            parse_prompt(bad)
    # the paper's own example runs "A: yes Q: ..." together; a repeated description is cut off
    text = ("Q: Are there a group of monkeys in the image?\nChoices: yes, no\nA: yes Q: What are the monkeys "
            "doing?\nChoices: eating, swinging from trees\nA: Swinging from trees\nQ: Is there a parrot?\n"
            "Choices: yes, no\nA: maybe\nImage description: a dog\nQ: Is there a dog?\nChoices: yes, no\nA: yes")
    assert parse_questions(text) == [
        {"question": "Are there a group of monkeys in the image?", "choices": ["yes", "no"], "answer": "yes"},
        {"question": "What are the monkeys doing?", "choices": ["eating", "swinging from trees"],
         "answer": "swinging from trees"}]
    assert parse_yes_no("Yes.") and not parse_yes_no(" no, it cannot")
    assert parse_choice("The answer is: Red.", ["red", "blue"]) == "red"
    with pytest.raises(ReplyParseError, match="several"):
        parse_choice("red or blue", ["red", "blue"])
    assert [parse_aesthetic(t) for t in ("7", "7/10", "I give it 8.5 out of 10", "10")] == [7, 7, 8.5, 10]
    for bad in ("beautiful", "7 or 8", "11"):
        with pytest.raises(ReplyParseError):
            parse_aesthetic(bad)


def test_results_of_another_judge_or_model_are_not_mixed(tmp_path):
    judge = ScriptedJudge(add_concept, probabilities=by_concepts)
    kwargs = dict(out_dir=tmp_path, iterations=1, seeds=[0], progress=False)
    run_mt2ie({"m": drawer}, judge, seeds("a dog"), **kwargs)
    with pytest.raises(ValueError, match="evaluator"):
        run_mt2ie({"m": drawer}, ScriptedJudge(add_concept, probabilities=by_concepts, model="other"),
                  seeds("a dog"), **kwargs)
    with pytest.raises(ValueError, match="different model named 'm'"):
        run_mt2ie({"m": lambda p, s: drawer(p, s)}, judge, seeds("a dog"), **kwargs)
    with pytest.raises(ValueError, match="another prompt under id 's1'"):
        run_mt2ie({"m": drawer}, judge, seeds("a cat"), **kwargs)
    with pytest.raises(ValueError, match="model name"):
        run_mt2ie({"a/b": drawer}, judge, seeds("a dog"), **kwargs)


# -- resuming: a killed run ends as one that never stopped ----------------------------------


def _job(out, slow=False):
    """The run of the resume test; ``slow`` gives the test time to kill it mid-way."""
    def paced(prompts, seeds_):
        images = []
        for p, s in zip(prompts, seeds_):
            time.sleep(0.15 if slow else 0)
            images += drawer([p], [s])
        return images

    def rewrite(request):
        return f"Prompt: {previous(request)} [{TEMPLATE_BIN[request.messages[0].text]}]"

    judge = ScriptedJudge(rewrite, probabilities=lambda q: (len(q.question) % 10) / 10)
    return run_mt2ie({"a": paced, "b": paced}, judge, None, out_dir=out, mode="adaptive", iterations=4,
                     seeds=[0, 1], progress=False)


@pytest.mark.slow
def test_killed_run_resumes_to_the_identical_complete_set(tmp_path):
    ref, run = tmp_path / "ref", tmp_path / "run"
    expected = _job(ref)
    code = "import runpy, sys; runpy.run_path(sys.argv[1])['_job'](sys.argv[2], slow=True)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code, __file__, str(run)], env=env, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and len(list(run.rglob("*.png"))) < 13:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = (run / "runs" / "a.jsonl").read_text().count("\n")
    assert 0 < done < expected["rows"], "the kill should land mid-run"
    (run / "runs" / ".tmp-torn.part").write_text('{"id": "half a ro')  # what a kill mid-write leaves

    again = _job(run)
    assert again["new"] == expected["rows"] - done and again["rows"] == expected["rows"] == 2 * 8 * 4
    for name in ("runs/a.jsonl", "runs/b.jsonl", "prompt_chains.jsonl", "seed_prompts.jsonl"):
        assert (run / name).read_text() == (ref / name).read_text(), name
    pngs = sorted(p.relative_to(ref) for p in ref.rglob("*.png"))
    assert pngs == sorted(p.relative_to(run) for p in run.rglob("*.png")) and len(pngs) == 64
    for p in pngs:
        assert (run / p).read_bytes() == (ref / p).read_bytes(), p
    assert not list(run.rglob(".tmp-*"))
    ids = [r["id"] for r in BENCHMARK.read_release(run).configs["runs"]]
    assert len(ids) == len(set(ids)) == 64
    assert again["table"] == expected["table"]


def test_saved_run_reads_back_and_loads_as_a_dataset(tmp_path):
    out, hub = tmp_path / "run", tmp_path / "hub"

    def fragile(prompts, seeds_):
        if any("kite" in p for p in prompts):
            raise RuntimeError("no kites")
        return drawer(prompts, seeds_)

    judge = ScriptedJudge(lambda r: f"Prompt: {previous(r)} with a kite", probabilities=lambda q: 0.75)
    run_mt2ie({"m": fragile}, judge, None, out_dir=out, iterations=2, seeds=[0], progress=False)
    release = BENCHMARK.read_release(out)
    assert release.counts["runs"] == {"runs": 4, "models": 1, "failed": 4}
    assert {a.kind for a in release.anomalies} == {"unscored"}
    build.build_dataset("mt2ie", out, hub)
    runs = datasets.load_dataset(str(hub), "runs", split="test")
    assert runs.features == RUN_FEATURES and runs.num_rows == 8
    first = runs[0]
    assert first["iteration"] == 0 and first["score"] == 0.75
    saved = Image.open(out / "runs" / BENCHMARK.image_path(first))
    assert np.array_equal(np.asarray(first["image"]), np.asarray(saved))
    failed = runs[4]  # the rows of iteration 0, then those of iteration 1
    assert failed["iteration"] == 1 and failed["image"] is None and failed["failure"] == "drawing failed: RuntimeError: no kites"


# -- command line ---------------------------------------------------------------------------


def _parser():
    p = argparse.ArgumentParser(prog="t2ireason mt2ie")
    add_mt2ie_args(p)
    return p


def test_cli_options_have_paper_defaults_and_help(capsys):
    args = _parser().parse_args(["--model", "sd=stabilityai/sd-turbo", "--out", "x"])
    assert args.models == [("sd", "stabilityai/sd-turbo")] and args.judge == PAPER_JUDGE
    assert (args.mode, args.iterations, args.seeds, args.seed_prompts_per_seed, args.scoring) == \
        ("iterative", 5, [0, 1, 2, 3, 4], 4, ["vqascore"])
    assert (args.temperature, args.difficulty, args.reference, args.aesthetic) == (0.3, "auto", None, False)
    assert all(a.help for a in _parser()._actions)
    for bad, message in ((["--model", "sd"], "expected name=<diffusers folder or hub id>"),
                         (["--model", "a/b=x"], "model name 'a/b'"),
                         (["--model", "a=x", "--parser", "nowhere:parse"], "cannot load the parser")):
        with pytest.raises(SystemExit):
            _parser().parse_args([*bad, "--out", "x"])
        assert message in capsys.readouterr().err
    ref = _parser().parse_args(["--model", "a=x", "--out", "x", "--reference", "a, b,c"]).reference
    assert ref == ["a", "b", "c"]


@pytest.mark.slow
def test_cli_runs_tiny_sd_scored_by_the_tiny_vlm(tiny_models, tmp_path, capsys):
    import torch

    torch.set_num_threads(1)
    out = tmp_path / "out"
    args = _parser().parse_args([
        "--model", f"tiny={tiny_models['sd']}", "--model", f"tiny2={tiny_models['sd']}",
        "--judge", f"hf:{tiny_models['vlm']}", "--no-cache", "--out", str(out), "--iterations", "1",
        "--seeds", "0", "--seed-prompts-per-seed", "2", "--steps", "2", "--height", "64", "--width", "64",
        "--reference", "tiny2,tiny", "--no-progress"])
    assert run_mt2ie_command(args) == 0
    printed = capsys.readouterr().out
    assert "Kendall's tau vs the reference" in printed and str(out / "summary.json") in printed
    assert (out / "mt2ie_iterations.png").is_file()
    rows = BENCHMARK.read_release(out).configs["runs"]
    assert len(rows) == 4 and all(0 <= r["score"] <= 1 for r in rows)
    assert rows[0]["evaluator"] == f"hf:{tiny_models['vlm']}"
    # the stored score is the judge's VQAScore of the saved image
    judge = load_judge(f"hf:{tiny_models['vlm']}")
    again = judge.yes_probability([r["image"] for r in rows],
                                  [f'Does this figure show "{r["prompt"]}"? Please answer yes or no.' for r in rows])
    assert [r["score"] for r in rows] == pytest.approx(again, abs=1e-6)
    assert Image.open(rows[0]["image"]).size == (64, 64)
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["table"]["compared"]) == {"tiny", "tiny2"} and summary["table"]["kendall_tau"] in (-1, 1)


# -- the ranking metrics beside the agent's (seed 002, Tables 3 and 5) --------------------------------------------

LEVELS = {"good": 230, "mid": 140, "bad": 50}
VIE_SC, VIE_PQ = '{"score": [%d], "reasoning": "r"}', '{"score": [%d, 9], "reasoning": "r"}'


def by_brightness(level: int):
    return lambda prompts, seeds_: [Image.new("RGB", (8, 8), (level,) * 3) for _ in prompts]


def agent_and_vie_judge() -> ScriptedJudge:
    """Writes the prompts; answers VIEScore's requests by how bright the image is, VQAScore's too."""
    def reply(request):
        first = next(m.text for m in request.messages if m.role == "user")
        if first.startswith("Existing prompt"):
            return add_concept(request)
        level = round(np.asarray(request.messages[-1].images[0].image).mean() / 255 * 10) if \
            request.messages[-1].images else 5
        return (VIE_PQ if "naturalness" in first else VIE_SC) % max(level, 1)

    return ScriptedJudge(reply, probabilities=lambda q: float(np.asarray(q.image.image).mean() / 255))


def test_ranking_metrics_score_the_same_images_and_each_ranking_meets_the_reference(tmp_path, tiny_models):
    judge = agent_and_vie_judge()
    models = {m: by_brightness(v) for m, v in LEVELS.items()}
    common = dict(out_dir=tmp_path, seeds=[0, 1], iterations=2, seed_prompts_per_seed=2, progress=False,
                  reference=["good", "mid", "bad"])
    clip = {"scoring": ["vqascore", "viescore", "clip_score"], "scoring_judges": {"clip_score": str(tiny_models["clip"])}}
    summary = run_mt2ie(models, judge, seeds("a dog", "a cat"), **clip, **common)
    rows = BENCHMARK.read_release(tmp_path).configs["runs"]
    assert all([s["metric"] for s in r["metric_scores"]] == ["viescore", "clip_score"] for r in rows)
    good = next(r for r in rows if r["model"] == "good")
    assert good["metric_scores"][0]["score"] == pytest.approx((9 * 9) ** 0.5 / 10)  # O = sqrt(min SC x min PQ)
    assert list(summary["rankings"]) == ["VIEScore", "CLIPScore", "MT2IE (scripted)"]  # the paper's column order
    assert summary["rankings"]["VIEScore"]["kendall_tau"] == pytest.approx(1.0)
    assert summary["rankings"]["MT2IE (scripted)"] == summary["table"]
    from t2ireason.benchmarks.mt2ie.rankings import kendall_table

    table = kendall_table(summary["rankings"])
    assert table.columns == ["VIEScore", "CLIPScore", "MT2IE (scripted)"]
    assert table.rows["Kendall's τ"]["MT2IE (scripted)"].value == pytest.approx(1.0)

    asked = len(judge.requests)
    again = run_mt2ie(models, judge, seeds("a dog", "a cat"), **clip, **common)
    assert len(judge.requests) == asked and again["rankings"]["VIEScore"] == summary["rankings"]["VIEScore"]
    with pytest.raises(ValueError, match="ranking_metrics"):  # rows without DSG's scores are never mixed in
        run_mt2ie(models, judge, seeds("a dog", "a cat"), scoring=["vqascore", "viescore", "dsg"], **common)


def test_ranking_metrics_are_checked_before_anything_is_drawn(tmp_path):
    judge = agent_and_vie_judge()
    call = dict(out_dir=tmp_path, seeds=[0], iterations=1, progress=False)
    for scoring, extra, message in (
            (["vqascore", "clipscore"], {}, "ranking metric"),
            (["vqascore", "viescore", "viescore"], {}, "viescore twice"),
            (["clip_score", "vqascore"], {"mode": "adaptive"}, "adaptive mode bins the agent's score on 0-1"),
            (["vqascore"], {"scoring_judges": {"viescore": "openai:gpt-4o"}}, "no ranking metric of this run"),
            (["vqascore", "dsg"], {"scoring_options": {"dsg": {"dependancy": "none"}}}, "unknown dsg option")):
        with pytest.raises(ValueError, match=message):
            run_mt2ie({"m": drawer}, judge, seeds("a dog"), scoring=scoring, **call, **extra)
    assert not judge.requests and not list(tmp_path.iterdir())


def test_the_command_prints_table_3_and_the_report_of_two_folders_is_table_5(tmp_path, capsys, monkeypatch):
    import base64
    import io
    import math

    from t2ireason import cli
    from t2ireason.testing_http import Answer, serve

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t2i_levels.py").write_text("from PIL import Image\n" + "".join(
        f"def {m}(prompts, seeds):\n    return [Image.new('RGB', (8, 8), ({v}, {v}, {v})) for _ in prompts]\n"
        for m, v in LEVELS.items()))
    monkeypatch.syspath_prepend(str(tmp_path))
    pool = tmp_path / "seed_prompts.jsonl"
    pool.write_text("".join(json.dumps(s) + "\n" for s in seeds("a dog", "a cat")))

    def answer(request):
        urls = request.image_urls
        level = np.asarray(Image.open(io.BytesIO(base64.b64decode(urls[0].split(",", 1)[1])))).mean() / 255 if urls \
            else 0.5
        if request.body.get("logprobs"):
            return Answer("Yes", top_logprobs=[{"Yes": math.log(level), "No": math.log(1 - level)}])
        return Answer((VIE_PQ if "naturalness" in request.text else VIE_SC) % max(round(level * 10), 1))

    with serve(answer) as server:
        for out, model in (("big", "llava-34b"), ("small", "llava-7b")):
            argv = ["mt2ie", *[a for m in LEVELS for a in ("--model", f"{m}=python:t2i_levels:{m}")],
                    "--judge", f"openai:{model}@{server.base_url}", "--scoring", "vqascore", "viescore",
                    "--reference", "good,mid,bad", "--iterations", "1", "--seeds", "0", "1", "--seed-prompts", str(pool),
                    "--seed-prompts-per-seed", "2", "--no-cache", "--out", str(tmp_path / out), "--no-progress"]
            assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "### MT2IE Table 3: Kendall's τ between each metric's ranking and the reference" in printed
    assert "| Model | VIEScore | MT2IE (llava-34b) |" in printed and "| Kendall's τ | 1.0000 | 1.0000 |" in printed
    assert cli.main(["report", str(tmp_path / "big"), str(tmp_path / "small"), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "tables.md").read_text()
    assert "### MT2IE Table 5: Kendall's τ between each method's ranking and the reference" in md
    assert "| Model | VIEScore [big] | MT2IE (llava-34b) | VIEScore [small] | MT2IE (llava-7b) |" in md
    # issue 48: --published says that MT2IE has no published rows, rather than being silently ignored
    capsys.readouterr()
    assert cli.main(["report", str(tmp_path / "big"), "--out", str(tmp_path / "pub"), "--published"]) == 0
    assert "--published: MT2IE has no published rows" in capsys.readouterr().out
    assert "--published: MT2IE has no published rows" in (tmp_path / "pub" / "tables.md").read_text()
