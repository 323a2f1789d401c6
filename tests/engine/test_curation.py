"""PRISM-Bench's curated half (appendix C.1) and PRISM-Bench-ZH (section 3.1): elements drawn from the pools,
prompts composed by an LLM with the paper's string checks, the Chinese edition, the release layout."""

from __future__ import annotations

import json
import re

import pytest

from t2ireason import cli
from t2ireason.benchmarks.prism_bench.release import read_release
from t2ireason.engine.curation import (
    CURATED_TRACKS,
    ZH_EXAMPLE,
    adapt_zh,
    curate,
    draw_elements,
    expand_long_text,
    long_text_sources,
    pools,
    write_subset,
)
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.testing_http import Answer, serve


def _text(request) -> str:
    return "\n".join(m.text for m in request.messages)


def test_elements_are_drawn_reproducibly_and_from_the_pools():
    p = pools()
    assert draw_elements("entity", 7, seed=3) == draw_elements("entity", 7, seed=3)
    assert [draw_elements("entity", i, seed=3) for i in range(10)] != [draw_elements("entity", i, seed=4)
                                                                       for i in range(10)]
    for i in range(50):
        ent = draw_elements("entity", i)
        assert 1 <= len(ent["elements"]) <= 3
        assert all(e in p["entity"][c] for c, e in zip(ent["categories"], ent["elements"]))
        text = draw_elements("text_rendering", i)
        assert text["text"] in p["text_rendering"]["content"] and text["placement"] in p["text_rendering"]["placement"]
    # the paper's Style: 25 detailed styles in four categories, 2 prompts each
    styles = [draw_elements("style", i)["style"] for i in range(50)]
    assert len(set(styles)) == 25 and all(styles.count(s) == 2 for s in set(styles))
    assert {"Impressionism", "Cubism", "oil painting", "watercolor", "long exposure", "pixel art"} <= set(styles)
    # Plutchik's wheel: eight primary emotions, each with its milder and more intense form, every one used
    emotions = {draw_elements("affection", i)["emotion"] for i in range(50)}
    assert len(emotions) == 24 and {"joy", "serenity", "ecstasy", "terror", "vigilance"} <= emotions
    with pytest.raises(ValueError, match="Long Text is expanded"):
        draw_elements("long_text", 0)


def test_a_prompt_missing_the_exact_text_is_asked_again_and_a_lasting_miss_is_a_failure():
    asked = []

    def llm(request):
        asked.append(request)
        want = re.search(r'exact text is rendered: "(.*)"', _text(request)).group(1)
        first = len(request.messages) == 1
        # the first reply changes the text's case: not letter for letter
        return json.dumps({"prompt": f'A sign reading "{want.upper() if first else want}".'})

    result = curate(ScriptedJudge(llm), ["text_rendering"], n=3, seed=1)
    assert len(asked) == 6 and not result.failures  # each prompt re-asked once, naming what was missing
    assert "must contain, exactly as written" in _text(asked[3])
    assert [line["elements"]["text"] in line["prompt"] for line in result.lines["text_rendering"]] == [True] * 3

    never = curate(ScriptedJudge(lambda r: json.dumps({"prompt": "A sign."})), ["entity"], n=2, max_reasks=1)
    assert not never.lines and len(never.failures) == 2
    assert never.failures[0]["replies"] == ['{"prompt": "A sign."}'] * 2  # every raw reply kept


def test_curated_lines_join_the_representative_half_and_read_as_a_prism_release(tmp_path):
    write_subset(tmp_path, "en", "style", [{"prompt": f"representative {i}", "subset": "representative"}
                                           for i in range(2)])

    def llm(request):
        style = re.search(r"in this style \([^)]*\): (.*?)\. Name", _text(request)).group(1)
        return json.dumps({"prompt": f"A harbour at dusk in {style}."})

    result = curate(ScriptedJudge(llm), ["style"], n=4)
    write_subset(tmp_path, "en", "style", result.lines["style"])
    write_subset(tmp_path, "en", "style", result.lines["style"])  # written again: replaced, not doubled
    lines = [json.loads(x) for x in (tmp_path / "captions/en/style.jsonl").read_text().splitlines()]
    assert [x["subset"] for x in lines] == ["representative"] * 2 + ["curated"] * 4
    release = read_release(tmp_path)
    assert release.counts["style_en"] == {"rows": 6, "subset:representative": 2, "subset:curated": 4}


def test_zh_translates_every_line_and_adapts_text_rendering(tmp_path):
    write_subset(tmp_path, "en", "text_rendering", [{"prompt": 'A bottle labeled "RYE".', "subset": "curated"}])
    write_subset(tmp_path, "en", "style", [{"prompt": "A harbour in Cubism.", "subset": "representative"},
                                           {"prompt": "A cat in watercolor.", "subset": "curated"}])
    seen = []

    def llm(request):
        seen.append(_text(request))
        if len(request.messages) == 1 and "harbour" in _text(request):
            return json.dumps({"translation": "A harbour, in English"})  # not Chinese: asked again
        return json.dumps({"translation": "一个标有‘茅台’的酒瓶。" if "RYE" in _text(request) else "立体主义的港口。"})

    result = adapt_zh(ScriptedJudge(llm), tmp_path)
    assert not result.failures
    adapted = [t for t in seen if "RYE" in t]
    assert ZH_EXAMPLE[1] in adapted[0] and "adapt it to a Chinese context" in adapted[0]
    assert all("Chinese context" not in t for t in seen if "RYE" not in t)  # only Text rendering is adapted
    assert any("must be in Chinese" in t for t in seen)
    style = result.lines["style"]
    assert [x["subset"] for x in style] == ["representative", "curated"]
    assert style[0]["prompt_en"] == "A harbour in Cubism." and style[0]["prompt"] == "立体主义的港口。"
    for track, lines in result.lines.items():
        write_subset(tmp_path, "zh", track, lines)
    assert read_release(tmp_path).counts["zh"]["rows"] == 3


def test_long_text_uses_the_best_captioned_images_and_asks_for_length():
    rows = [{"id": "a", "captions": {"style": "s"}, "characteristic_scores": {"style": 9.0}},
            {"id": "b", "captions": {"style": "s", "entity": "e"}, "characteristic_scores": {"style": 5, "entity": 6}},
            {"id": "c", "captions": {"style": "s", "entity": "e"}, "characteristic_scores": {"style": 8, "entity": 8}},
            {"id": "d", "captions": {}, "characteristic_scores": {}}]
    assert [r["id"] for r in long_text_sources(rows, 2)] == ["c", "b"]
    replies = iter([json.dumps({"prompt": "too short"}), json.dumps({"prompt": " ".join(["word"] * 130)})])
    result = expand_long_text(ScriptedJudge(lambda r: next(replies)), rows[2:3])
    assert not result.failures and result.lines["long_text"][0]["source_id"] == "c"


def test_cli_curates_over_http_and_a_second_run_pays_nothing(tmp_path, capsys):
    def answer(request):
        text = request.text
        style = re.search(r"in this style \([^)]*\): (.*?)\. Name", text)
        emotion = re.search(r"conveys this emotion [^:]*: (\w+) ", text)
        return json.dumps({"prompt": f"A scene in {style.group(1)}." if style else f"A scene of {emotion.group(1)}."})

    argv = ["engine", "curate", "--out", str(tmp_path / "bench"), "--tracks", "style", "affection", "--n", "4",
            "--cache", str(tmp_path / "cache.sqlite")]
    with serve(answer, models=["tiny"]) as server:
        assert cli.main([*argv, "--judge", f"openai:tiny@{server.base_url}"]) == 0
        paid = len(server.requests)
        assert cli.main([*argv, "--judge", f"openai:tiny@{server.base_url}"]) == 0
        assert len(server.requests) == paid  # every answer from the response cache
    out = capsys.readouterr().out
    assert "style: 4 curated prompts" in out and "8 requests (8 from the response cache)" in out
    lines = (tmp_path / "bench/captions/en/affection.jsonl").read_text().splitlines()
    assert [json.loads(x)["elements"]["emotion"] for x in lines] == ["serenity", "joy", "ecstasy", "acceptance"]


def test_cli_leaves_a_track_with_a_failure_unwritten_and_says_where_the_replies_are(tmp_path, capsys):
    with serve(Answer(json.dumps({"prompt": "A scene."})), models=["tiny"]) as server:
        status = cli.main(["engine", "curate", "--out", str(tmp_path), "--tracks", "entity", "--n", "2",
                           "--judge", f"openai:tiny@{server.base_url}", "--no-cache", "--max-reasks", "0"])
    assert status == 1
    assert not (tmp_path / "captions").exists()
    failures = [json.loads(x) for x in (tmp_path / "curation_failures.jsonl").read_text().splitlines()]
    assert len(failures) == 2 and failures[0]["replies"] == ['{"prompt": "A scene."}']
    assert "2 prompts got no usable reply" in capsys.readouterr().out


def test_long_text_needs_data_before_anything_is_asked(tmp_path, capsys):
    status = cli.main(["engine", "curate", "--out", str(tmp_path), "--tracks", "long_text", "--judge", "openai:gpt-4.1"])
    assert status != 0 and "give --data" in capsys.readouterr().err


def test_every_curated_track_renders_its_instruction():
    requests = []
    curate(ScriptedJudge(lambda r: requests.append(r) or json.dumps({"prompt": "x"})), CURATED_TRACKS, n=1,
           max_reasks=0)
    assert len(requests) == len(CURATED_TRACKS)
    assert all('Reply with a JSON object and nothing else: {"prompt"' in _text(r) for r in requests)
