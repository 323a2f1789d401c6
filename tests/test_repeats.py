"""``evaluate --repeats K`` (issue 49): a sampled judge asked K times per image, each repeat a request of its
own (cached, journaled, resumed, never bought twice), the image scored by its first reply, the judge's noise
measured; a greedy judge refused."""

import dataclasses
import hashlib
import json

import numpy as np
import pytest
from PIL import Image
from scipy import stats as sps
from study.runs import varied_answer

from t2ireason.judges import JudgeUnavailable
from t2ireason.judges.base import ChatRequest, Sampling
from t2ireason.judges.cache import CachedJudge
from t2ireason.judges.repeats import GreedyJudgeError, RepeatedJudge
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.runs import Run
from t2ireason.stats_paired import judge_noise

SAMPLED = Sampling(temperature=1.0)


def noisy_reply(request):
    """A reply that depends on the image's question and, a little, on the draw (the request's repeat)."""
    base = hashlib.sha256(json.dumps([m.text for m in request.messages]).encode()).digest()
    answer = varied_answer(request.json_schema or {"type": "object"}, base)
    if isinstance(answer, dict) and isinstance(answer.get("score"), int):  # the draw moves the score by -1, 0 or 1
        answer["score"] = min(10, max(0, answer["score"] + request.repeat % 3 - 1))
    return json.dumps(answer)


def sample_run(folder, name="run"):
    run = Run.create(folder / name, "prism-bench", name=name, limit=6)
    for i, row in enumerate(run.rows()):
        path = run.images_dir / run.bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (40 * i % 256, 90, 150)).save(path)
    return run


def test_repeat_k_is_a_request_of_its_own_and_repeat_0_a_plain_one(tmp_path):
    plain = ChatRequest.simple("Is it a cat?", sampling=Sampling(temperature=1.0, seed=7))
    assert plain.fingerprint(plain.sampling) == ChatRequest.simple(
        "Is it a cat?", sampling=Sampling(temperature=1.0, seed=7), repeat=0).fingerprint(plain.sampling)
    inner = ScriptedJudge(lambda r: f"reply {r.repeat} {r.sampling.seed}", sampling=SAMPLED)
    cached = CachedJudge(inner, tmp_path / "cache.sqlite")
    again = dataclasses.replace(plain, repeat=1)  # the same sampling: only the repeat tells them apart
    assert cached.chat_key(again)[0] != cached.chat_key(plain)[0]
    assert cached.chat_key(dataclasses.replace(plain, repeat=0))[0] == cached.chat_key(plain)[0]
    assert cached.chat([plain])[0].text == "reply 0 7"
    assert RepeatedJudge(cached, 1).chat([plain])[0].text == "reply 1 8"  # its own draw: the seed moved on
    assert RepeatedJudge(cached, 2).chat([plain])[0].text == "reply 2 9"
    assert len(inner.requests) == 3
    # asked again, each from the cache: repeat 0 is the plain request's entry, nothing bought twice
    assert [cached.chat([plain])[0].text, RepeatedJudge(cached, 1).chat([plain])[0].text] == ["reply 0 7", "reply 1 8"]
    assert len(inner.requests) == 3
    # a reply the scorer rejects is forgotten as the repeat's, never as repeat 0's
    RepeatedJudge(cached, 1).reject([plain], [cached.chat([plain])[0]])
    assert cached.chat([plain])[0].text == "reply 0 7" and len(inner.requests) == 3


def test_a_greedy_judge_needs_no_repeats(tmp_path):
    run = sample_run(tmp_path)
    judge = ScriptedJudge(noisy_reply)  # temperature 0
    with pytest.raises(GreedyJudgeError, match="greedy .* needs no repeats"):
        run.evaluate(judge, options={"structured_output": True}, name="e", cache=False, progress=False, repeats=3)
    assert not judge.requests and "e" not in run.reload()["evaluations"]  # nothing asked, nothing recorded
    with pytest.raises(GreedyJudgeError):
        RepeatedJudge(ScriptedJudge(noisy_reply), 1).chat([ChatRequest.simple("x")])


def test_repeats_score_by_the_first_reply_and_measure_the_judges_noise(tmp_path):
    run = sample_run(tmp_path)
    once = ScriptedJudge(noisy_reply, sampling=SAMPLED)
    plain = run.evaluate(once, options={"structured_output": True}, name="once", cache=False, progress=False)
    thrice = ScriptedJudge(noisy_reply, sampling=SAMPLED)
    scores = run.evaluate(thrice, options={"structured_output": True}, name="thrice", cache=False, progress=False,
                          repeats=3)
    assert len(thrice.requests) == 3 * len(once.requests)  # every repeat asked, once
    assert [r.repeat for r in thrice.requests].count(2) == len(once.requests)
    firsts = {r.id: r.score for r in run.results("once")}
    results = run.results("thrice")
    assert {r.id: r.score for r in results} == firsts  # the paper's rule: the first reply
    assert scores["aggregate"]["prism_score"] == plain["aggregate"]["prism_score"]
    scored = [r for r in results if r.score is not None]
    assert all(len(r.context["repeats"]) == 2 and r.context["repeats"][0]["replies"] for r in scored)
    noise = scores["judge_noise"]
    assert noise["repeats"] == 3 and noise["images"] == len(scored) and 0 < noise["judge_share"] < 1
    assert noise["widening"] > 1 and noise["disagreeing"] > 0
    assert run.reload()["evaluations"]["thrice"]["settings"]["repeats"] == 3


def test_an_interrupted_evaluation_with_repeats_resumes_without_asking_twice(tmp_path):
    run = sample_run(tmp_path)
    calls = []

    def flaky(request):
        calls.append(request)
        if len(calls) == 7:  # mid-way through a chunk's repeats
            raise JudgeUnavailable("the judge went away")
        return noisy_reply(request)

    judge = ScriptedJudge(flaky, sampling=SAMPLED, batch_size=1)  # each reply handed on as it comes, as HTTP
    with pytest.raises(JudgeUnavailable):
        run.evaluate(judge, options={"structured_output": True}, name="e", cache=False, progress=False, repeats=3,
                     chunk_size=2)
    judge = ScriptedJudge(noisy_reply, sampling=SAMPLED)
    scores = run.evaluate(judge, options={"structured_output": True}, name="e", cache=False, progress=False,
                          repeats=3, chunk_size=2)
    full = ScriptedJudge(noisy_reply, sampling=SAMPLED)
    run.evaluate(full, options={"structured_output": True}, name="f", cache=False, progress=False, repeats=3)
    asked = len(calls) - 1 + len(judge.requests)  # the failed call bought nothing
    assert asked == len(full.requests) and scores["reused"] == len(calls) - 1


def test_judge_noise_against_a_direct_computation():
    x = np.array([[70, 80, 70], [30, 30, 40], [50, 60, 55], [90, 90, 90], [20, 10, 15.0]])
    got = judge_noise(x)
    within = np.mean([np.var(row, ddof=1) for row in x])
    assert got["within"] == pytest.approx(within)
    assert got["f"] == pytest.approx(sps.f_oneway(*x).statistic)  # the images as groups: MSB / MSW
    between = (3 * np.var(x.mean(1), ddof=1) - within) / 3
    assert got["between"] == pytest.approx(between)
    assert got["judge_share"] == pytest.approx(within / (within + between))
    assert got["widening"] == pytest.approx(np.sqrt((within + between) / between))
    assert got["disagreeing"] == pytest.approx(0.8)
    assert judge_noise([[1.0, None, 2.0], [3.0, 4.0, 5.0]]) == {"images": 1, "repeats": 3}


def test_a_report_says_the_judges_noise_under_the_runs_tables(tmp_path):
    """A run evaluated with ``--repeats 3``: its report says, under each of its tables (Markdown, HTML, LaTeX), the
    run, K, the judge's share, the widening and the disagreement; the line of the smallest detectable difference
    says the judge's part of it. A run without repeats: neither."""
    from t2ireason.report.writer import write_report

    run = sample_run(tmp_path)
    run.evaluate(ScriptedJudge(noisy_reply, sampling=SAMPLED), options={"structured_output": True}, name="thrice",
                 cache=False, progress=False, repeats=3)
    noise = run.scores("thrice")["judge_noise"]
    report = write_report([run], tmp_path / "report", evaluation="thrice", n_resamples=100)
    line = (f"run: judge noise over 3 replies (K=3) to each of {noise['images']} images: {noise['judge_share']:.0%} "
            f"of the variance of the scores is the judge's (within an image), which widens the interval "
            f"{noise['widening']:.2f}x; {noise['disagreeing']:.0%} of the images' replies disagree")
    md = report["tables_md"].read_text()
    assert line in md and "is the judge's own noise (measured by evaluate --repeats on run (K=3)" in md
    page = report["html"][0].read_text().replace("&#39;", "'")
    assert line in page
    assert "judge noise over 3 replies" in report["tables_tex"].read_text()
    run.evaluate(ScriptedJudge(noisy_reply, sampling=SAMPLED), options={"structured_output": True}, name="once",
                 cache=False, progress=False)
    plain = write_report([run], tmp_path / "plain", evaluation="once", n_resamples=100)["tables_md"].read_text()
    assert "within noise" in plain and "judge noise" not in plain and "the judge's own noise" not in plain
