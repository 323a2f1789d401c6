"""PRISM-Bench: reading captions/{en,zh}/<track>.jsonl, the official request structure, reply
parsing with re-asks, per-track means on 0-100 and the pooled overall."""

import json
import shutil

import pytest
from PIL import Image

from t2ireason.benchmarks import ReleaseError, get_benchmark
from t2ireason.benchmarks.prism_bench import SYSTEM_PROMPT, TRACKS, parse_judgement
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.parsing import ReplyParseError

BENCH = get_benchmark("prism-bench")
AESTHETIC_START = "You are a hyper-critical quality assurance inspector"


@pytest.fixture(scope="module")
def sample():
    return BENCH.read_release(BENCH.sample_path())


@pytest.fixture
def release_copy(tmp_path):
    shutil.copytree(BENCH.sample_path(), tmp_path / "repo")
    return tmp_path / "repo"


def image(color="red"):
    return Image.new("RGB", (16, 16), color)


def judgement(score, why="ok"):
    return json.dumps({"justification": why, "score": score})


def scripted(table):
    """A judge answering (prompt, axis) -> reply text from ``table``."""

    def reply(request):
        text = request.messages[-1].text if len(request.messages) < 3 else request.messages[1].text
        axis = "aesthetic" if text.startswith(AESTHETIC_START) else "alignment"
        prompt = text.rsplit("text prompt: ", 1)[1]
        return table[(prompt, axis)]

    return ScriptedJudge(reply)


# -- reading the release ----------------------------------------------------------------------------

def test_sample_covers_every_config(sample):
    assert set(sample.configs) == set(BENCH.configs)
    assert len(BENCH.configs) == 17 and BENCH.configs[:3] == ("all", "en", "zh")
    assert len(sample.configs["all"]) == len(sample.configs["en"]) + len(sample.configs["zh"]) == 29
    assert all(2 <= len(sample.configs[f"{t}_{lang}"]) <= 3 for t in TRACKS for lang in ("en", "zh"))
    assert sample.counts["imagination_en"] == {"rows": 2, "subset:representative": 1, "subset:curated": 1}
    assert sample.anomalies == [] and sample.license is None


def test_rows(sample):
    row = sample.configs["entity_en"][2]
    assert row == {"id": "entity_en_2", "prompt": row["prompt"], "track": "entity", "language": "en", "index": 2,
                   "subset": None, "extra": "{}"}
    assert row["prompt"].startswith("A vintage Leica")
    assert sample.configs["imagination_en"][0]["subset"] == "curated"
    assert json.loads(sample.configs["long_text_zh"][1]["extra"]) == {"category": "gcot"}
    zh_text = sample.configs["text_rendering_zh"][0]["prompt"]
    assert "FRESH BREAD DAILY" in zh_text and "面包店" in zh_text
    assert BENCH.image_path(row) == "en/entity/2.png" and BENCH.image_path(row, 3) == "en/entity/2_3.png"
    assert BENCH.row_id(sample.configs["style_zh"][1]) == "style_zh_1"

    import datasets

    ds = datasets.Dataset.from_list(sample.configs["all"], features=BENCH.features)
    assert ds[0]["id"] == "imagination_en_0" and ds.features["index"].dtype == "int32"


def test_reads_the_captions_folder_itself_and_reports_gaps(release_copy):
    (release_copy / "captions/zh/style.jsonl").unlink()
    (release_copy / "captions/en/notes.jsonl").write_text('{"prompt": "x"}\n')
    (release_copy / "captions/en/entity.jsonl").write_text('{"prompt": "a", "subset": "hard"}\n\n{"prompt": "b"}\n')
    rel = BENCH.read_release(release_copy / "captions")
    assert "style_zh" not in rel.configs and len(rel.configs["entity_en"]) == 2
    assert rel.configs["entity_en"][1]["index"] == 1  # blank lines do not count
    assert [(a.kind, a.file, a.row) for a in rel.anomalies] == [
        ("unknown_subset", "captions/en/entity.jsonl", 1), ("missing_file", "captions/zh/style.jsonl", None),
        ("unknown_file", "captions/en/notes.jsonl", None)]


@pytest.mark.parametrize("content, message", [
    ('{"prompt": "a"}\n{"prompt": "b",\n', r"captions/en/style.jsonl, line 2: not valid JSON"),
    ('{"prompt": "a"}\n["b"]\n', r"captions/en/style.jsonl, line 2: expected a JSON object, got list"),
    ('{"prompt": "a"}\n{"text": "b"}\n', r"captions/en/style.jsonl, line 2: no non-empty \"prompt\" \(keys: \['text'\]\)"),
    ('{"prompt": ""}\n', r"line 1: no non-empty \"prompt\""),
])
def test_malformed_lines_name_file_and_line(release_copy, content, message):
    (release_copy / "captions/en/style.jsonl").write_text(content)
    with pytest.raises(ReleaseError, match=message):
        BENCH.read_release(release_copy)


def test_not_a_release(tmp_path):
    with pytest.raises(ReleaseError, match="no captions/en or captions/zh folder"):
        BENCH.read_release(tmp_path)


# -- requests and replies ---------------------------------------------------------------------------------

def test_request_structure(sample):
    row = sample.configs["text_rendering_zh"][0]
    judge = ScriptedJudge([judgement(8), judgement(6)])
    BENCH.score([row], [image()], judge)
    alignment, aesthetic = judge.requests
    for request in (alignment, aesthetic):
        system, user = request.messages
        assert (system.role, system.content) == ("system", (SYSTEM_PROMPT,))
        text, img = user.content  # the template text, then the image
        assert user.role == "user" and img.size == (16, 16)
        assert text.endswith(f"text prompt: {row['prompt']}")  # the Chinese prompt, in the English template
        assert '"justification"' in text and "{{" not in text
    assert alignment.messages[1].text.startswith("You are a highly critical AI evaluator")
    assert "**Track-Specific Instructions: In-Image Text Generation**" in alignment.messages[1].text
    assert aesthetic.messages[1].text.startswith(AESTHETIC_START)
    assert alignment.images[0] is aesthetic.images[0]  # one JudgeImage per image


def test_each_track_has_its_own_alignment_template(sample):
    rows = [sample.configs[f"{t}_en"][0] for t in TRACKS]
    judge = ScriptedJudge([judgement(5)] * 14)
    BENCH.score(rows, [image() for _ in rows], judge, system_prompt=None)
    alignments = [r.messages[0].text for r in judge.requests[0::2]]
    aesthetics = {r.messages[0].text.rsplit("text prompt:", 1)[0] for r in judge.requests[1::2]}
    assert len({a.rsplit("text prompt:", 1)[0] for a in alignments}) == 7 and len(aesthetics) == 1
    assert all(len(r.messages) == 1 for r in judge.requests)  # system_prompt=None: no system message
    assert "imaginative object" in alignments[0] and "naming a specific entity" in alignments[1]
    assert "Long Text Comprehension" in alignments[6]


@pytest.mark.parametrize("reply, expected", [
    (judgement(7, "Minor flaws."), {"score": 7.0, "justification": "Minor flaws."}),
    ('Here you go:\n```json\n{"justification": "x", "score": "9",}\n```', {"score": 9.0, "justification": "x"}),
    ('{"score": 0}', {"score": 0.0, "justification": None}),
])
def test_judgement_parsing(reply, expected):
    assert parse_judgement(reply) == expected


@pytest.mark.parametrize("reply, message", [
    (judgement(11), r"score 11 is (outside|above).*10"),
    ('{"justification": "fine"}', 'no "score"'),
    ("Score: 7", "no JSON"),
])
def test_bad_judgements_are_rejected(reply, message):
    with pytest.raises(ReplyParseError, match=message):
        parse_judgement(reply)


# -- scores and tables ----------------------------------------------------------------------------------

def test_track_means_and_pooled_overall_by_hand(sample):
    rows = sample.configs["imagination_en"] + sample.configs["entity_en"][:1] + sample.configs["entity_zh"][:1]
    p = [r["prompt"] for r in rows]
    judge = scripted({(p[0], "alignment"): judgement(8), (p[0], "aesthetic"): judgement(6),
                      (p[1], "alignment"): judgement(4), (p[1], "aesthetic"): judgement(10),
                      (p[2], "alignment"): judgement(9), (p[2], "aesthetic"): judgement(7),
                      (p[3], "alignment"): judgement(3), (p[3], "aesthetic"): judgement(5)})
    results = BENCH.score(rows, [image() for _ in rows], judge)
    assert len(judge.requests) == 8
    assert [r.score for r in results] == [70, 70, 80, 40]
    assert results[0].subscores == {"alignment": 80, "aesthetic": 60}
    assert [(q.group, q.score, q.reasoning) for q in results[0].questions] == [("alignment", 8, "ok"), ("aesthetic", 6, "ok")]
    assert results[3].id == "entity_zh_0" and results[3].config == "entity_zh"

    out = BENCH.aggregate(results, n_resamples=100)
    imagination, entity = out["tracks"]["imagination"], out["tracks"]["entity"]
    assert (imagination["alignment"], imagination["aesthetic"], imagination["average"]) == (60, 80, 70)
    assert (entity["alignment"], entity["aesthetic"], entity["average"]) == (60, 60, 60)
    # overall pooled over the 4 images: alignment (80+40+90+30)/4, aesthetic (60+100+70+50)/4
    assert (out["alignment"], out["aesthetic"], out["prism_score"]) == (60, 70, 65)
    assert out["overall_track_mean"] == 65
    assert out["table"]["Imagination"] == {"Ali.": 60, "Aes.": 80, "Avg.": 70}
    assert list(out["table"]) == ["Imagination", "Entity", "Overall"]
    en, zh = out["by_language"]["en"], out["by_language"]["zh"]
    assert en["tracks"]["entity"]["alignment"] == 90 and zh["prism_score"] == 40
    assert en["alignment"] == 70 and en["aesthetic"] == pytest.approx((60 + 100 + 70) / 3)
    assert out["failed_replies"] == {"alignment": 0, "aesthetic": 0}
    cell = imagination["summary"]["alignment"]
    assert cell["n"] == 2 and cell["ci_low"] <= cell["mean"] <= cell["ci_high"]


def test_pooled_and_track_mean_differ_with_unequal_tracks(sample):
    rows = sample.configs["entity_en"] + sample.configs["style_en"][:1]  # 3 entity images, 1 style image
    table = {(r["prompt"], a): judgement(10 if r["track"] == "entity" else 0) for r in rows for a in ("alignment", "aesthetic")}
    out = BENCH.aggregate(BENCH.score(rows, [image() for _ in rows], scripted(table)), n_resamples=100)
    assert out["prism_score"] == 75 and out["overall_track_mean"] == 50


def test_reask_then_failure_is_counted(sample):
    rows = sample.configs["style_en"]
    p = [r["prompt"] for r in rows]
    calls = {}

    def reply(request):
        text = request.messages[1].text
        axis = "aesthetic" if text.startswith(AESTHETIC_START) else "alignment"
        key = (text.rsplit("text prompt: ", 1)[1], axis)
        calls[key] = calls.get(key, 0) + 1
        if key == (p[0], "alignment"):  # out of range, then fixed
            return judgement(11) if calls[key] == 1 else judgement(9)
        if key == (p[1], "aesthetic"):  # never usable
            return "I would rate it highly."
        return judgement(5)

    judge = ScriptedJudge(reply)
    first, second = BENCH.score(rows, [image(), image("blue")], judge, max_reasks=1)
    assert first.score == 70 and first.reasks == 1 and len(first.replies) == 3
    reask = next(r for r in judge.requests if len(r.messages) == 4)
    assert reask.messages[0].role == "system" and "score 11" in reask.messages[3].text
    assert second.score is None and second.subscores == {"alignment": 50, "aesthetic": None}
    assert second.failure.startswith("aesthetic: unparsable reply") and second.reasks == 1
    out = BENCH.aggregate([first, second], n_resamples=100)
    # the failed aesthetic reply is counted, and left out of the mean (not a zero)
    assert out["failed_replies"] == {"alignment": 0, "aesthetic": 1}
    assert out["tracks"]["style"]["aesthetic"] == 50 and out["tracks"]["style"]["alignment"] == 70
    assert out["tracks"]["style"]["failed"] == {"alignment": 0, "aesthetic": 1}


def test_each_image_is_encoded_once(sample, monkeypatch):
    rows = sample.configs["affection_en"]
    saves = []
    original = Image.Image.save
    monkeypatch.setattr(Image.Image, "save", lambda self, *a, **k: (saves.append(1), original(self, *a, **k))[1])

    def encode_then_reply(request):
        for img in request.images:
            img.data_url("JPEG")
        return judgement(7)

    judge = ScriptedJudge(encode_then_reply)
    BENCH.score(rows, [image(), image("blue")], judge)
    assert len(judge.requests) == 4 and len(saves) == 2


def test_sampling_option_reaches_every_request(sample):
    judge = ScriptedJudge([judgement(5)] * 2)
    BENCH.score(sample.configs["style_en"][:1], [image()], judge,
                sampling={"temperature": 0, "top_p": 1, "seed": 42, "max_tokens": 4096})
    assert {r.sampling.seed for r in judge.requests} == {42}


def test_bad_calls(sample):
    with pytest.raises(TypeError, match="unknown PRISM-Bench option"):
        BENCH.score(sample.configs["style_en"][:1], [image()], ScriptedJudge([]), temperature=0)
    with pytest.raises(ValueError, match="track 'dance'"):
        BENCH.score([dict(sample.configs["style_en"][0], track="dance")], [image()], ScriptedJudge([]))


def test_presets():
    paper = BENCH.presets["paper"]
    assert paper["judge"] == "openai:gpt-4.1-2025-04-14" and paper["judge_kwargs"]["image_format"] == "JPEG"
    s = paper["judge_kwargs"]["sampling"]
    assert (s.temperature, s.top_p, s.seed, s.max_tokens) == (0, 1, 42, 4096)
    assert paper["options"]["system_prompt"] == "You are a helpful assistant." and BENCH.presets["official"] == paper
    qwen = BENCH.presets["qwen"]
    assert qwen["judge"] == "hf:Qwen/Qwen2.5-VL-72B-Instruct"
    assert qwen["judge_kwargs"]["min_pixels"] == 256 * 28 * 28 and qwen["judge_kwargs"]["max_pixels"] == 1280 * 28 * 28
    assert qwen["judge_kwargs"]["dtype"] == "bfloat16" and qwen["judge_kwargs"]["sampling"].max_tokens == 1024
