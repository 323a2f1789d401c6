"""PRISM-Bench: reading captions/{en,zh}/<track>.jsonl byte for byte and surviving irregular records,
the paper protocol's requests, reply parsing with re-asks, per-track means on 0-100 and the pooled
overall, unreadable images as per-image failures, the presets. (The official protocol: test_prism_official.py.)"""

import json
import shutil

import pytest
from PIL import Image

from t2ireason.benchmarks import ReleaseError, get_benchmark
from t2ireason.benchmarks.prism_bench import SYSTEM_PROMPT, TRACKS, parse_judgement
from t2ireason.judges.base import Reply
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
    # the sample's own README sits beside captions/, as the authors' README does: not read (the builder lists it)
    assert sample.anomalies == [] and sample.quarantine == [] and sample.license is None
    assert sample.files_read == {f"captions/{lang}/{t}.jsonl" for lang in ("en", "zh") for t in TRACKS}


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
    assert json.loads(rel.configs["entity_en"][0]["extra"]) == {"subset": "hard"}  # an unknown subset is kept
    assert [(a.kind, a.file, a.row) for a in rel.anomalies] == [
        ("unknown_subset", "captions/en/entity.jsonl", 1), ("missing_file", "captions/zh/style.jsonl", None),
        ("unknown_file", "captions/en/notes.jsonl", None)]
    assert "en/entity.jsonl" in rel.files_read and "en/notes.jsonl" not in rel.files_read  # relative to the source


def test_track_files_under_another_spelling_are_read_in_place_and_reported(release_copy):
    (release_copy / "captions/en/text_rendering.jsonl").rename(release_copy / "captions/en/Text-Rendering.jsonl")
    (release_copy / "captions/zh/long_text.jsonl").rename(release_copy / "captions/zh/longtext.jsonl")
    rel = BENCH.read_release(release_copy)
    sample = BENCH.read_release(BENCH.sample_path())
    assert rel.configs == sample.configs and rel.counts == sample.counts
    assert [(a.kind, a.file, a.detail) for a in rel.anomalies] == [
        ("file_name", "captions/en/Text-Rendering.jsonl", "read as captions/en/text_rendering.jsonl, which the release "
                                                          "lacks (the names differ only in spelling)"),
        ("file_name", "captions/zh/longtext.jsonl", "read as captions/zh/long_text.jsonl, which the release lacks "
                                                    "(the names differ only in spelling)")]
    assert {"captions/en/Text-Rendering.jsonl", "captions/zh/longtext.jsonl"} <= rel.files_read


def test_text_is_kept_byte_for_byte(release_copy):
    prompts = ["A red door ", "  two leading spaces", "tab\tand a line\u2028separator\u0085here", "emoji 🦜 and é",
               "ends with a newline\n"]
    lines = [json.dumps({"prompt": p}, ensure_ascii=False) for p in prompts]
    # a byte-order mark and CRLF line ends are encoding, not text
    (release_copy / "captions/en/style.jsonl").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    rel = BENCH.read_release(release_copy)
    assert [r["prompt"] for r in rel.configs["style_en"]] == prompts
    assert [a for a in rel.anomalies if a.file == "captions/en/style.jsonl"] == []


@pytest.mark.parametrize("content, rows, kinds", [
    # not JSON, not an object, no prompt: quarantined with the raw line; the others keep their image index
    ('{"prompt": "a"}\n{"prompt": "b",\n{"prompt": "c"}\n', ["a", "c"], ["quarantined"]),
    ('{"prompt": "a"}\n["b"]\n5\nnull\n', ["a"], ["quarantined"] * 3),
    ('{"text": "b"}\n{"prompt": null}\n{"prompt": ["x"]}\n{"prompt": "c"}\n', ["c"], ["quarantined"] * 3),
    # kept, and reported
    ('"a bare string is the prompt"\n', ["a bare string is the prompt"], ["not_an_object"]),
    ('{"prompt": 42}\n{"prompt": true}\n', ["42", "true"], ["prompt_not_text", "prompt_not_text"]),
    ('{"prompt": ""}\n{"prompt": "   "}\n', ["", "   "], ["empty_prompt", "empty_prompt"]),
    ('{"prompt": "a", "prompt": "b"}\n', ["b"], ["duplicate_key"]),
    ('{"prompt": "same"}\n{"prompt": "same"}\n', ["same", "same"], ["duplicate_prompt"]),
    ('{"prompt": "x", "seed": 3, "tags": ["a"], "subset": 7}\n', ["x"], ["unknown_subset"]),
    (b'{"prompt": "caf\xe9"}\n{"prompt": "ok"}\n', ["ok"], ["quarantined"]),  # Latin-1, not UTF-8
    ('{"prompt": "\\ud800 unpaired"}\n', [], ["quarantined", "empty_file"]),
    ("", [], ["empty_file"]),
    ("\n\n  \n", [], ["empty_file"]),
])
def test_irregular_lines_are_kept_or_quarantined_never_abort(release_copy, content, rows, kinds):
    """``kinds``: what the file's lines give, in order: "quarantined" for a line in the quarantine, else
    the kind of its anomaly."""
    path = release_copy / "captions/en/style.jsonl"
    data = content if isinstance(content, bytes) else content.encode()
    path.write_bytes(data)
    rel = BENCH.read_release(release_copy)
    assert [r["prompt"] for r in rel.configs.get("style_en", [])] == rows
    found = [a for a in rel.anomalies if a.file == "captions/en/style.jsonl"]
    lost = [q for q in rel.quarantine if q.file == "captions/en/style.jsonl"]
    assert [a.kind for a in found] == [k for k in kinds if k != "quarantined"]
    assert len(lost) == kinds.count("quarantined") == len(rel.quarantine)
    lines = data.split(b"\n")
    for q in lost:  # the raw line is in the report: nothing is lost (bytes that are not UTF-8 as \\x escapes)
        assert q.raw == lines[q.row - 1].decode("utf-8", "backslashreplace")
        assert "image index" in q.reason
    assert rel.counts.get("style_en", {}).get("quarantined", 0) == kinds.count("quarantined")
    assert len(rel.configs["imagination_en"]) == 2  # the other files are read as usual


def test_quarantined_lines_keep_the_other_image_numbers(release_copy):
    (release_copy / "captions/en/style.jsonl").write_text('{"prompt": "a"}\nnot json\n{"prompt": "c"}\n')
    rel = BENCH.read_release(release_copy)
    rows = rel.configs["style_en"]
    assert [(r["id"], r["index"]) for r in rows] == [("style_en_0", 0), ("style_en_2", 2)]
    assert [BENCH.image_path(r) for r in rows] == ["en/style/0.png", "en/style/2.png"]
    [lost] = rel.quarantine
    assert (lost.file, lost.row, lost.raw) == ("captions/en/style.jsonl", 2, "not json")
    assert lost.reason.startswith("not JSON (") and lost.reason.endswith("; image index 1 left empty")


def test_a_checkout_as_users_get_it(release_copy, tmp_path):
    """The authors' repository: captions/, the evaluation scripts, a README, a .git folder; as a
    checkout, and one folder deeper as an unpacked archive (found by the builder)."""
    from t2ireason import build

    (release_copy / "evaluation").mkdir()
    for script in ("eval_gpt41.py", "eval_qwen25.py"):
        (release_copy / "evaluation" / script).write_text("print('the authors script')\n")
    (release_copy / "LICENSE").write_text("license text\n")
    (release_copy / ".git").mkdir()
    (release_copy / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    deeper = _archive_layout(release_copy, tmp_path)
    for n, source in enumerate((release_copy, deeper)):
        report = build.build_dataset(BENCH, source, tmp_path / f"out{n}", license="other")
        assert report.configs["all"]["rows"] == 29 and report.anomalies == [] and report.quarantine == []
        assert report.ignored_files == ["LICENSE", "README.md", "evaluation/eval_gpt41.py", "evaluation/eval_qwen25.py"]
        assert report.authors_scripts == ["evaluation/eval_gpt41.py", "evaluation/eval_qwen25.py"]
        saved = json.loads((tmp_path / f"out{n}" / "build_report.json").read_text())
        assert saved["authors_scripts"] == report.authors_scripts
        summary = report.summary()
        assert "the authors' scripts, not read: evaluation/eval_gpt41.py, evaluation/eval_qwen25.py" in summary
        assert "2 other file(s) of the release not read (not data): LICENSE, README.md" in summary
    assert report.source_info["kind"] == "checkout"
    with pytest.raises(ReleaseError, match="t2ireason build prism-bench --source` finds the root"):
        BENCH.read_release(deeper)  # the reader reads the root it is given


def _archive_layout(repo, tmp_path):
    top = tmp_path / "archive"
    shutil.copytree(repo, top / "prism-bench-0123abc")
    return top


def test_official_release_and_markers():
    release = BENCH.official_release
    assert (release.kind, release.repo) == ("github", "rongyaofang/prism-bench")
    assert release.scripts == ("evaluation/eval_gpt41.py", "evaluation/eval_qwen25.py")
    assert release.files == {}  # no hash could be verified where the project was built: none is claimed
    assert "captions/en/imagination.jsonl" in BENCH.release_markers and len(BENCH.release_markers) == 14
    assert all((BENCH.sample_path() / m).is_file() for m in BENCH.release_markers)


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


def test_unreadable_images_are_their_own_failures(sample, tmp_path, monkeypatch):
    """Zero bytes, a truncated PNG, not an image, a decompression bomb: each is that image's failure;
    the readable images around them are judged as usual."""
    good = tmp_path / "good.png"
    Image.new("RGB", (16, 16), "green").save(good)
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "cut.png").write_bytes(good.read_bytes()[:-12])  # its IEND chunk is gone
    (tmp_path / "text.png").write_text("not an image")
    bomb = tmp_path / "bomb.png"
    Image.new("RGB", (64, 64)).save(bomb)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 64 x 64 is then a bomb; 16 x 16 is not
    paths = [good, tmp_path / "empty.png", tmp_path / "cut.png", tmp_path / "text.png", bomb, good]
    rows = (sample.configs["entity_en"] + sample.configs["style_en"] + sample.configs["affection_en"])[:len(paths)]
    judge = ScriptedJudge(lambda request: judgement(6))
    results = BENCH.score(rows, [str(p) for p in paths], judge)
    assert len(judge.requests) == 4  # two images, two requests each
    assert [r.score for r in results] == [60, None, None, None, None, 60]
    for r, why in zip(results[1:5], ["empty", "incomplete", "cannot identify", "refusing"]):
        assert r.failure.startswith("image: ") and why in r.failure and not r.retryable
        assert r.subscores == {"alignment": None, "aesthetic": None} and r.context["outcome"]["aesthetic"] == "image_error"
        assert r.image is not None and r.replies == []
    out = BENCH.aggregate(results, n_resamples=50)
    assert out["outcomes"]["alignment"] == {"counted": 2, "image_error": 4} and out["alignment"] == 60
    assert any("could not be read" in note for note in out["notes"])


def test_judge_errors_are_failures_and_transient_ones_retryable(sample):
    rows = sample.configs["style_en"]

    def reply(request):
        if rows[0]["prompt"] in request.messages[1].text:
            return Reply(text="", model="m", sampling={}, error="HTTP 503 after 7 attempts", transient=True)
        return Reply(text="", model="m", sampling={}, error="HTTP 400: bad request")

    results = BENCH.score(rows, [image(), image("blue")], ScriptedJudge(reply))
    assert [r.retryable for r in results] == [True, False]
    assert results[0].failure == "alignment: judge error: HTTP 503 after 7 attempts; aesthetic: judge error: HTTP 503 after 7 attempts"
    assert results[1].context["outcome"] == {"alignment": "judge_error", "aesthetic": "judge_error"}
    assert results[0].reasks == 0  # a failed request is not re-asked here: retrying is the backend's job


def test_presets():
    paper, official, qwen = (BENCH.presets[name] for name in ("paper", "official", "qwen"))
    for preset in (paper, official):
        assert preset["judge"] == "openai:gpt-4.1-2025-04-14"
        s = preset["judge_kwargs"]["sampling"]
        assert (s.temperature, s.top_p, s.seed, s.max_tokens) == (0, 1, 42, 4096)
        assert "image_format" not in preset["judge_kwargs"] and "max_pixels" not in preset["judge_kwargs"]  # as is
    assert paper["options"] == {"protocol": "paper"}
    assert official["options"] == {"protocol": "official", "image_bytes": "pil"}  # the bytes PIL saves again
    # the authors' script: max_tokens sent as such, 3 tries, stream false
    assert official["judge_kwargs"]["max_tokens_param"] == "max_tokens" and official["judge_kwargs"]["max_retries"] == 2
    assert official["judge_kwargs"]["extra_body"] == {"stream": False}
    assert qwen["judge"] == "hf:Qwen/Qwen2.5-VL-72B-Instruct"
    kwargs = qwen["judge_kwargs"]
    # the processor's own pixel limits, as eval_qwen25.py sets them; the judge itself resizes nothing
    assert kwargs["processor_kwargs"] == {"min_pixels": 256 * 28 * 28, "max_pixels": 1280 * 28 * 28}
    assert "max_pixels" not in kwargs and "min_pixels" not in kwargs
    assert kwargs["generation_config"] == "model" and kwargs["sampling"].max_tokens == 1024
    assert (kwargs["dtype"], kwargs["device_map"]) == ("bfloat16", "balanced")
    assert kwargs["chat_template_kwargs"] == {"add_vision_id": True}
    assert qwen["options"] == {"protocol": "official", "system_prompt": None, "image_first": True,
                               "image_preparation": "qwen_vl_utils"}  # qwen_vl_utils resizes before the processor
