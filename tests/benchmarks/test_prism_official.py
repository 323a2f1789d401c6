"""PRISM-Bench's official protocol against the authors' evaluation code as formats.md documents it:
their prompt strings byte for byte (the packaged copies, checked against recorded hashes and against
../shared/official_prompts when present), their request parameters and the image file's own bytes over
real HTTP, 3 tries per request, the Qwen script's message order, and their parser's counting rules.
(The table those rules give on a battery of replies: tests/metrics/test_prism_score.py.)"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.benchmarks.prism_bench import TRACKS, judge_requests, official_judgement, template
from t2ireason.judges import load_judge
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.prompts import verbatim
from t2ireason.testing_http import Answer, Fail, serve

BENCH = get_benchmark("prism-bench")
SHARED = Path(__file__).resolve().parents[3] / "shared" / "official_prompts" / "prism_bench"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/official_prompts/prism_bench")
NAMES = ["aesthetic", *(f"alignment_{t}" for t in TRACKS)]
#: sha256 of the authors' strings as packaged (= ../shared/official_prompts/prism_bench/<name>.txt)
SHA256 = {
    "aesthetic": "4bc0dde0f9e9cfbc59dcae520b1b4fdd74c7705fb0923a20402835b2ce53991e",
    "alignment_imagination": "6817644b35301a3ca8bde1cb842123b7214395328cf609de1457af4f9b7c7cc3",
    "alignment_entity": "c54ca56acb81a2825868c80705697b47b12964fe1dbfcf4ef4cb0ae54b17b904",
    "alignment_text_rendering": "8e57da5a1f6fed51c8586affb20cdf14615a188a4e9d5d37eceb2f7cf0435c24",
    "alignment_style": "0bc5ff9b6832248306a478e06e545ddfbb2e9b49189f645a882e32bbba614ece",
    "alignment_affection": "8bfbe0e83bd87e3b08fb12115b6a94b5c4c12a45ebd38dd698f273fd0e65cac5",
    "alignment_composition": "f5686cb7b45685af6dcc963121dfd1b7d529b42a59a64410360434cc3c7fa306",
    "alignment_long_text": "2ebf1ec72b68d4250c954b63e5de1846b7ed02eb6eb95c0063e928fe4738b803",
}
#: a caption as the release may give it: braces (str.format must leave them alone), quotes, a final space
CAPTION = 'A neon sign reads "{OPEN} 24/7" above a café door '
NOT_READ = {"unparsable", "unparsed_no_demjson3"}  # their parser fails (with or without demjson3 here)


def authors_file(name: str) -> str:
    """The authors' text as ../shared holds it when present, else the packaged copy (hash-checked below)."""
    path = SHARED / f"{name}.txt"
    return path.read_bytes().decode() if path.is_file() else verbatim("prism_bench/official", name)


def sections(text: str) -> tuple[str, str]:
    """(system, user text) of a file in the official_prompts format, read independently of the package."""
    head, sep = "===== system =====\n", "\n===== user (text) =====\n"
    assert text.startswith(head) and text.count(sep) == 1 and text.endswith("\n")
    system, user = text[len(head):].split(sep)
    return system, user[:-1]


@pytest.fixture
def png(tmp_path):
    """A finely textured PNG file: any re-encoding would change its bytes."""
    path = tmp_path / "0.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (20, 24, 3), dtype=np.uint8)).save(path)
    return path


@pytest.mark.parametrize("name", NAMES)
def test_packaged_texts_are_the_authors_byte_for_byte(name):
    packaged = verbatim("prism_bench/official", name).encode()
    assert hashlib.sha256(packaged).hexdigest() == SHA256[name]
    if not SHARED.is_dir():
        pytest.skip("../shared/official_prompts is not here; the recorded hashes were checked")
    assert packaged == (SHARED / f"{name}.txt").read_bytes()


@pytest.mark.parametrize("track", list(TRACKS))
def test_official_requests_are_the_authors_strings(track, png):
    requests = judge_requests(CAPTION, track, str(png), protocol="official")
    for request, name in zip(requests, (f"alignment_{track}", "aesthetic")):
        system, user = sections(authors_file(name))
        expected = user.replace("{text_prompt}", CAPTION).replace("{{", "{").replace("}}", "}")
        assert expected == user.format(text_prompt=CAPTION)  # str.format, as their code fills it
        (sys_msg, user_msg) = request.messages
        assert (sys_msg.role, sys_msg.content) == ("system", ("You are a helpful assistant.",)) and system == sys_msg.text
        text, image = user_msg.content  # the text, then the image
        assert text == expected and text.endswith(f"text prompt: {CAPTION}\n")
        assert text.startswith(" \nYou are a hyper-critical" if name == "aesthetic" else "\nYou are a highly critical")
        assert image.data == png.read_bytes() and image.format == "PNG"  # the file's own bytes
    assert template("official", "aesthetic") == template("official", "aesthetic")  # one shared aesthetic text


def test_the_paper_text_is_the_printed_one_and_differs_as_the_card_says():
    for name in NAMES:
        paper_system, paper = template("paper", name)
        official_system, official = template("official", name)
        assert paper_system == official_system == "You are a helpful assistant."
        assert paper.endswith("text prompt: {text_prompt}") and official.endswith("text prompt: {text_prompt}\n")
        assert "**" in paper and "**" not in official  # the typesetting's emphasis...
        assert '"justification"' in paper and '" justification "' in official  # ...and its quotes
        assert '"score":' in paper and "“score“:" in official
        assert "  \"score\": ...," in paper and "\"score\": …," in official
    assert "provide a one-sentence justification for" in template("paper", "alignment_imagination")[1]
    assert "provide one-sentence justification for" in template("official", "alignment_imagination")[1]
    assert "style’s" in template("paper", "alignment_style")[1] and "style's" in template("official", "alignment_style")[1]


def test_the_official_preset_sends_the_authors_request_over_http(png):
    """eval_gpt41.py's request, as a real OpenAI-compatible server receives it."""
    preset = BENCH.presets["official"]
    row = BENCH.read_release(BENCH.sample_path()).configs["text_rendering_en"][0]
    with serve(Answer('{"justification": "Fine.", "score": 8}'), models=["gpt-4.1-2025-04-14"]) as server:
        judge = load_judge(f"openai:gpt-4.1-2025-04-14@{server.base_url}", **preset["judge_kwargs"])
        try:
            [result] = BENCH.score([row], [str(png)], judge, **preset["options"])
        finally:
            judge.close()
    assert result.score == 0.8 and result.context["outcome"] == {"alignment": "counted", "aesthetic": "counted"}
    assert len(server.requests) == 2 and {"hyper-critical" in r.text for r in server.requests} == {True, False}
    for received in server.requests:  # in flight together: in any order
        body = received.body
        name = "aesthetic" if "hyper-critical" in received.text else "alignment_text_rendering"
        system, user = sections(authors_file(name))
        url = f"data:image/png;base64,{base64.b64encode(png.read_bytes()).decode()}"
        assert body["messages"] == [
            {"role": "system", "content": system},
            {"role": "user", "content": [{"type": "text", "text": user.format(text_prompt=row["prompt"])},
                                         {"type": "image_url", "image_url": {"url": url}}]}]
        assert {k: body[k] for k in ("model", "temperature", "top_p", "seed", "max_tokens", "stream")} == {
            "model": "gpt-4.1-2025-04-14", "temperature": 0.0, "top_p": 1.0, "seed": 42, "max_tokens": 4096,
            "stream": False}
        assert "response_format" not in body and "max_completion_tokens" not in body
        assert base64.b64decode(received.image_urls[0].split(",", 1)[1]) == png.read_bytes()


def test_three_tries_on_a_server_error_then_the_judgement_is_skipped(png):
    preset = BENCH.presets["official"]
    row = BENCH.read_release(BENCH.sample_path()).configs["style_en"][0]

    def behaviour(request):  # the aesthetic request always fails
        return Fail(500) if "hyper-critical" in request.text else Answer('{"justification": "x", "score": 7}')

    with serve(behaviour, models=["gpt-4.1-2025-04-14"]) as server:
        judge = load_judge(f"openai:gpt-4.1-2025-04-14@{server.base_url}",
                           **{**preset["judge_kwargs"], "backoff_base": 0.001, "backoff_max": 0.01})
        try:
            [result] = BENCH.score([row], [str(png)], judge, **preset["options"])
        finally:
            judge.close()
    assert sum("hyper-critical" in r.text for r in server.requests) == 3 and len(server.requests) == 4
    assert result.context["outcome"] == {"alignment": "counted", "aesthetic": "judge_error"}
    assert result.score is None and result.subscores == {"alignment": 70, "aesthetic": None}
    assert result.failure.startswith("aesthetic: judge error: HTTP 500") and "(3 attempts" in result.failure
    assert result.retryable  # a server error is transient: `t2ireason evaluate --retry-failed` redoes it
    out = BENCH.aggregate([result], protocol="official")
    assert out["table"]["Style"] == {"Ali.": 70, "Aes.": 0.0, "Avg.": 70}  # one pooled score; Aes. prints 0.00


def test_the_qwen_preset_puts_the_image_first_with_no_system_message(png):
    """eval_qwen25.py: the image, then the text; the model's chat template adds its own system message;
    the image as qwen_vl_utils hands it to the processor (its sides rounded to multiples of 28)."""
    preset = BENCH.presets["qwen"]
    row = BENCH.read_release(BENCH.sample_path()).configs["affection_zh"][1]
    judge = ScriptedJudge(lambda r: '{"justification": "x", "score": 6}')
    [result] = BENCH.score([row], [str(png)], judge, **preset["options"])
    assert result.score == 0.6 and len(judge.requests) == 2
    for request, name in zip(judge.requests, ("alignment_affection", "aesthetic")):
        [message] = request.messages
        image, text = message.content
        # 24x20: each side rounds to 28 (784 pixels < 4*28*28), so both scale up by sqrt(3136/480) and round
        # up: 24*2.556/28 = 2.19 -> 84, 20*2.556/28 = 1.83 -> 56; resized by PIL's default filter (bicubic)
        expected = Image.open(png).convert("RGB").resize((84, 56), Image.Resampling.BICUBIC)
        assert message.role == "user" and image.size == (84, 56) and image.image.tobytes() == expected.tobytes()
        assert text == sections(authors_file(name))[1].format(text_prompt=row["prompt"])


@pytest.mark.parametrize("reply, outcome, score", [
    ('{"justification": "Crisp.", "score": 9}', "counted", 9.0),
    ('```json\n{"justification": "x", "score": 7}\n```', "counted", 7.0),  # a json fence is stripped
    ('\n  ```json\n{"score": 4,}\n```  \n', "counted", 4.0),
    ('{"justification": "x", "score": 5,}', "counted", 5.0),  # trailing commas are removed...
    ('{"justification": "a,}", "score": 3}', "counted", 3.0),  # ...inside strings too
    ('{"justification": "x", "score": true}', "counted", 1.0),  # a boolean is an int to Python
    ('{"justification": "x", "score": false}', "counted", 0.0),
    ('{"justification": "x", "score": 85}', "counted", 85.0),  # no range check
    ('{"justification": "x", "score": -3}', "counted", -3.0),
    ('{"justification": "x", "score": 7.5}', "counted", 7.5),
    ('{"justification": "x", "score": "8"}', "no_number", None),  # a string is not an int or a float
    ('{"justification": "x", "score": null}', "no_number", None),
    ('{"justification": "x"}', "no_number", None),
    ('{"score": [8]}', "no_number", None),
    ("7", "summary_raises", None),  # their summary's `'score' in data` raises on a number...
    ("true", "summary_raises", None),
    ('"the score"', "summary_raises", None),  # ...and data['score'] on a string or list holding "score"
    ('["score"]', "summary_raises", None),
    ('"8"', "no_number", None),  # a string or list without "score" in it: warned about and skipped
    ("[1, 2]", "no_number", None),
    ("null", "unparsable", None),  # a false value: their script skips it as a parsing failure
    ("{}", "unparsable", None),
    ("0", "unparsable", None),
    ('""', "unparsable", None),
    ('{"justification": "x", "score": 6}\n```', "counted", 6.0),  # a closing fence is removed on its own
    ('```json\n{"score": 2}', "counted", 2.0),  # and an opening one without a closing one
    ('```python\n{"score": 9}\n```', NOT_READ, None),  # only a json fence is stripped
    ('```\n{"score": 9}\n```', NOT_READ, None),
    ('{"justification": "x", "score": 6}\nHope this helps!', NOT_READ, None),  # trailing text
    ('Here it is: {"score": 6}', NOT_READ, None),
    ('{"score": 3}{"score": 4}', NOT_READ, None),  # two objects
    ('{"score": 3}\n{"score": 4}', NOT_READ, None),
    ("", NOT_READ, None),
    ("Score: 7/10", NOT_READ, None),
])
def test_replies_are_counted_and_skipped_as_the_authors_parse_them(reply, outcome, score):
    judged = official_judgement(reply)
    assert judged.outcome in (outcome if isinstance(outcome, set) else {outcome})
    assert judged.score == score and judged.texts == [reply]
    assert (judged.outcome == "counted") == (judged.detail == "")


@pytest.mark.parametrize("reply, score", [
    ("{'justification': 'x', 'score': 7}", 7.0),  # single quotes
    ('{justification: "x", score: 6}', 6.0),  # bare keys
    ('{"score": 5 // a comment\n}', 5.0),
])
def test_what_only_demjson3_reads_is_counted(reply, score):
    pytest.importorskip("demjson3")
    assert official_judgement(reply).outcome == "counted" and official_judgement(reply).score == score


@pytest.mark.parametrize("reply, what", [
    # not JSON (so the authors' parser falls back to demjson3), with a number demjson3 keeps as a Decimal
    ("{'justification': 'x', 'score': 7.000000000000000000001}", "Decimal"),
    ("{justification: 'x', score: 12345678901234567890.5}", "Decimal"),
    ('{"score": 7, extra: [1e-400]}', "Decimal"),  # anywhere in the object
    ('{"justification": "x", "score": undefined}', "_undefined_class"),
    ('{"justification": undefined, "score": 7}', "_undefined_class"),
])
def test_what_json_cannot_write_is_recorded_as_the_authors_script_leaves_it(reply, what):
    """demjson3 reads these with a value json.dump cannot write: eval_gpt41.py stops on the json.dump
    of its result file (a run started again skips the broken file), so the reply is never counted;
    here it is recorded, and compute goes on."""
    demjson3 = pytest.importorskip("demjson3")
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply)
    with pytest.raises(TypeError):  # what the authors' script meets at json.dump
        json.dumps(demjson3.decode(reply))
    judged = official_judgement(reply)
    assert judged.outcome == "unwritable" and judged.score is None and what in judged.detail


def test_a_score_that_reads_as_an_infinity_is_refused_under_both_protocols():
    """Issue 40 item 8: {"score": 1e400} read as inf under the official protocol, counted, and made every mean
    it entered infinite. Refused as a malformed reply: the paper protocol re-asks it, then records a failure; the
    official one (which never re-asks) records it as not_finite, not counted, and says so in the notes."""
    rows = BENCH.read_release(BENCH.sample_path()).configs["style_en"][:1]
    for reply in ('{"justification": "x", "score": 1e400}', '{"score": -1e999}'):
        judged = official_judgement(reply)
        assert judged.outcome == "not_finite" and judged.score is None and "infinit" in judged.detail
    [official] = BENCH.score(rows, [Image.new("RGB", (8, 8))], ScriptedJudge(lambda r: '{"score": 1e400}'),
                             protocol="official")
    assert official.score is None and official.context["outcome"] == {"alignment": "not_finite",
                                                                       "aesthetic": "not_finite"}
    notes = BENCH.aggregate([official], protocol="official")["notes"]
    assert any("infinity" in n for n in notes), notes
    replies = iter(['{"score": 1e400}', '{"score": 1e400}', '{"score": 1e400}', '{"score": 7}'])
    [paper] = BENCH.score(rows, [Image.new("RGB", (8, 8))], ScriptedJudge(lambda r: next(replies)), max_reasks=1)
    assert paper.reasks == 2 and paper.subscores == {"alignment": None, "aesthetic": 70.0}
    assert "not a finite number" in paper.failure


def test_nan_is_counted_as_the_authors_json_round_trip_keeps_it():
    judged = official_judgement('{"justification": "x", "score": NaN}')  # json.dump writes NaN, json.load reads it
    assert judged.outcome == "counted" and judged.score != judged.score


def test_a_reply_json_cannot_write_never_crashes_compute():
    pytest.importorskip("demjson3")
    import evaluate

    rows = BENCH.read_release(BENCH.sample_path()).configs["style_en"][:2]
    replies = iter(['{"justification": "x", "score": undefined}', '{"justification": "x", "score": 8}',
                    "{'justification': 'x', 'score': 7.0000000000000000000001}", '{"score": 6}'])
    judge = ScriptedJudge(lambda r: next(replies))
    metric = evaluate.load(str(Path(__file__).resolve().parents[2] / "metrics" / "prism_score"), judge=judge,
                           preset="official", cache=False, progress=False)
    out = metric.compute(predictions=[Image.new("RGB", (8, 8))] * 2, references=rows)
    assert [r["context"]["outcome"] for r in out["per_image"]] == [
        {"alignment": "unwritable", "aesthetic": "counted"}, {"alignment": "unwritable", "aesthetic": "counted"}]
    assert out["outcomes"]["alignment"] == {"unwritable": 2} and out["table"]["Style"]["Ali."] == 0.0
    assert out["table"]["Style"]["Avg."] == 70.0  # one pooled list: 8 and 6
    assert any("json.dump cannot write" in n or "cannot write" in n for n in out["notes"])
    json.dumps(out)  # the results themselves are JSON


def authors_image_bytes(path: Path) -> bytes:
    """eval_gpt41.py's encode_image_to_base64(Image.open(path)), decoded: the image saved again by PIL
    in its own format."""
    import io

    image = Image.open(path)
    buffered = io.BytesIO()
    image.save(buffered, format=image.format or "PNG")
    return buffered.getvalue()


def test_the_official_preset_sends_the_image_as_pil_saves_it_again(tmp_path):
    """Not the file's own bytes: eval_gpt41.py opens the file with PIL and saves it again."""
    from PIL import PngImagePlugin

    path = tmp_path / "0.png"
    info = PngImagePlugin.PngInfo()
    info.add_text("parameters", "steps 28")  # a generator's text chunk, which PIL does not write again
    Image.fromarray(np.random.default_rng(1).integers(0, 256, (20, 24, 3), dtype=np.uint8)).save(
        path, pnginfo=info, compress_level=1)
    theirs = authors_image_bytes(path)
    assert theirs != path.read_bytes()
    preset = BENCH.presets["official"]
    row = BENCH.read_release(BENCH.sample_path()).configs["entity_en"][0]
    with serve(Answer('{"justification": "Fine.", "score": 8}'), models=["gpt-4.1-2025-04-14"]) as server:
        judge = load_judge(f"openai:gpt-4.1-2025-04-14@{server.base_url}", **preset["judge_kwargs"])
        try:
            [result] = BENCH.score([row], [str(path)], judge, **preset["options"])
            [plain] = BENCH.score([row], [str(path)], judge, **{**preset["options"], "image_bytes": "file"})
        finally:
            judge.close()
    assert result.score == plain.score == 0.8 and len(server.requests) == 4
    sent = [base64.b64decode(r.image_urls[0].split(",", 1)[1]) for r in server.requests]
    assert sent[:2] == [theirs, theirs] and sent[2:] == [path.read_bytes()] * 2
    assert all(r.image_urls[0].startswith("data:image/png;base64,") for r in server.requests)


def test_a_jpeg_file_is_saved_again_as_a_jpeg_at_pil_defaults(tmp_path):
    path = tmp_path / "0.png"  # a JPEG under a .png name, as a generator may leave it
    Image.fromarray(np.random.default_rng(2).integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(
        path, format="JPEG", quality=97)
    judge = ScriptedJudge(lambda r: '{"justification": "x", "score": 5}')
    row = BENCH.read_release(BENCH.sample_path()).configs["entity_en"][0]
    BENCH.score([row], [str(path)], judge, protocol="official", image_bytes="pil")
    image = judge.requests[0].messages[1].content[1]
    assert image.format == "JPEG" and image.data == authors_image_bytes(path) != path.read_bytes()


def test_the_qwen_preset_drops_alpha_as_pil_converts_it(tmp_path):
    """eval_qwen25.py converts with PIL before qwen_vl_utils: a transparent pixel keeps its colour (not white)."""
    path = tmp_path / "0.png"
    pixels = np.zeros((56, 56, 4), dtype=np.uint8)
    pixels[..., 0] = 200  # red, fully transparent
    Image.fromarray(pixels, "RGBA").save(path)
    judge = ScriptedJudge(lambda r: '{"justification": "x", "score": 5}')
    row = BENCH.read_release(BENCH.sample_path()).configs["entity_en"][0]
    BENCH.score([row], [str(path)], judge, **BENCH.presets["qwen"]["options"])
    image = judge.requests[0].messages[0].content[0]
    assert image.size == (56, 56) and image.image.getpixel((10, 10)) == (200, 0, 0)


def test_image_options_are_checked():
    row = BENCH.read_release(BENCH.sample_path()).configs["entity_en"][0]
    for bad in ({"image_bytes": "raw"}, {"image_preparation": "qwen"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            BENCH.score([row], [Image.new("RGB", (8, 8))], ScriptedJudge([]), **bad)


def test_without_demjson3_such_replies_are_named_not_hidden(monkeypatch):
    import builtins

    from t2ireason.benchmarks.prism_bench import protocol

    real_import = builtins.__import__
    monkeypatch.setattr(builtins, "__import__", lambda name, *a, **k: (_ for _ in ()).throw(ImportError(name))
                        if name == "demjson3" else real_import(name, *a, **k))
    protocol._demjson3.cache_clear()
    try:
        with pytest.warns(UserWarning, match="demjson3 is not installed"):
            judged = official_judgement("{'score': 7}")
        assert judged.outcome == "unparsed_no_demjson3" and "demjson3" in judged.detail
    finally:
        protocol._demjson3.cache_clear()


def test_no_reasks_under_the_official_protocol():
    rows = BENCH.read_release(BENCH.sample_path()).configs["style_en"][:1]
    judge = ScriptedJudge(lambda r: "no JSON at all")
    [result] = BENCH.score(rows, [Image.new("RGB", (8, 8))], judge, protocol="official")
    assert len(judge.requests) == 2 and result.reasks == 0 and result.replies == ["no JSON at all"] * 2
    with pytest.raises(ValueError, match="never re-asks"):
        BENCH.score(rows, [Image.new("RGB", (8, 8))], judge, protocol="official", max_reasks=2)
    with pytest.raises(ValueError, match="unknown PRISM-Bench protocol 'oficial'"):
        BENCH.score(rows, [Image.new("RGB", (8, 8))], judge, protocol="oficial")


def test_results_know_their_protocol():
    rows = BENCH.read_release(BENCH.sample_path()).configs["style_en"][:1]
    judge = ScriptedJudge(lambda r: json.dumps({"justification": "x", "score": 4}))
    official = BENCH.score(rows, [Image.new("RGB", (8, 8))], judge, protocol="official")
    paper = BENCH.score(rows, [Image.new("RGB", (8, 8))], judge)
    assert BENCH.aggregate(official)["protocol"] == "official" and BENCH.aggregate(paper)["protocol"] == "paper"
    with pytest.raises(ValueError, match="different protocols"):
        BENCH.aggregate(official + paper)
    with pytest.raises(ValueError, match="scored under protocol 'paper', not 'official'"):
        BENCH.aggregate(paper, protocol="official")
