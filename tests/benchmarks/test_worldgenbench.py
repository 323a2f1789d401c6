"""WorldGenBench: the release reader (field-name variants, checklist shapes, anomalies, errors),
the judge request, reply parsing with re-asks, per-image scores and the paper's tables."""

import json

import pytest
from PIL import Image

from t2ireason.benchmarks import ReleaseError, get_benchmark
from t2ireason.benchmarks.worldgenbench import normalize_checklist, parse_checklist_reply
from t2ireason.judges.base import Reply
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.parsing import ReplyParseError

BENCH = get_benchmark("worldgenbench")


@pytest.fixture(scope="module")
def sample():
    return BENCH.read_release(BENCH.sample_path())


def kinds(release):
    return [a.kind for a in release.anomalies]


def write(path, data):
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def image(color="red"):
    return Image.new("RGB", (16, 16), color)


# -- reading the release ----------------------------------------------------------------------------

def test_sample_reads_both_field_name_variants(sample):
    hum, nat = sample.configs["humanities"], sample.configs["nature"]
    assert len(hum) == 7 and len(nat) == 6
    # variant 1 (JSON list, {item, explanation} objects) covers every continent code
    assert sorted(r["continent"] for r in hum) == sorted(["AF", "AN", "AS", "EU", "NA", "OC", "SA"])
    assert hum[2]["country"] == "Japan" and hum[2]["discipline"] is None and hum[2]["id"] == "2"
    assert hum[2]["checklist"][1] == {"item": "Powdered green tea is whisked with a bamboo whisk",
                                      "explanation": "Matcha for the tea ceremony is prepared with a chasen."}
    # variant 2 (JSONL, idx/Prompt/Field, parallel lists, full discipline names) covers every discipline
    assert [r["discipline"] for r in nat] == ["ASTR", "BIO&MED", "CHEM", "EASC", "PHYS", "XDIS"]
    assert nat[0]["id"] == "n0" and nat[0]["prompt"].startswith("Draw a labelled teaching diagram")
    assert nat[2]["checklist"][0]["item"].startswith("The hydrogen column")
    assert nat[2]["checklist"][0]["explanation"].startswith("Water is H2O")
    assert json.loads(nat[4]["extra"]) == {"source": "project sample"}
    assert sample.counts["humanities"]["checklist_items"] == 22 and sample.counts["nature"]["discipline:CHEM"] == 1
    # full names were mapped to the paper's codes, and said so
    relabelled = [a.detail for a in sample.anomalies if a.kind == "relabelled"]
    assert "continent 'North America' read as 'NA'" in relabelled and len(relabelled) == 5
    assert sample.license == "mit"


def test_rows_fit_the_schema(sample):
    import datasets

    ds = datasets.Dataset.from_list(sample.configs["humanities"], features=BENCH.features)
    assert ds[0]["checklist"][0]["item"] == "Round stone vats filled with different coloured dyes"
    assert BENCH.row_id(ds[0]) == "humanities-0" and BENCH.image_path(ds[0], 1) == "humanities/0_1.png"


def test_field_map_overrides_names(tmp_path):
    records = [{"Beschreibung": "A harbour in Valparaiso", "kc": [{"Item": "Colourful houses", "Explanation": "hills"}],
                "Continent": "SA", "Nation": "Chile", "key": 9}]
    path = write(tmp_path / "humanities.json", records)
    # without the mapping no record has a prompt: the file is skipped and said so, nothing invented
    assert kinds(BENCH.read_release(path)) == ["skipped_file"]
    rel = BENCH.read_release(path, field_map={"prompt": "Beschreibung", "checklist": ["kc"], "id": "key"})
    row = rel.configs["humanities"][0]
    assert (row["id"], row["prompt"], row["country"], row["continent"]) == ("9", "A harbour in Valparaiso", "Chile", "SA")
    assert row["checklist"] == [{"item": "Colourful houses", "explanation": "hills"}]
    with pytest.raises(ValueError, match="unknown field 'promt'"):
        BENCH.read_release(path, field_map={"promt": "Beschreibung"})


@pytest.mark.parametrize("checklist, extra", [
    ([{"item": "A", "explanation": "a"}, {"item": "B", "explanation": "b"}], {}),
    ([{"Item": "A", "Explanation": "a"}, {"ITEM": "B", "explanation": "b"}], {}),
    ([{"requirement": "A", "reason": "a"}, {"requirement": "B", "reason": "b"}], {}),
    ([{"A": "a"}, {"B": "b"}], {}),
    ({"A": "a", "B": "b"}, {}),
    ({"items": ["A", "B"], "explanations": ["a", "b"]}, {}),
    (["Item: A Explanation: a", "**Item:** B **Explanation:** b"], {}),
    (json.dumps([{"item": "A", "explanation": "a"}, {"item": "B", "explanation": "b"}]), {}),
    (None, {"checklist_items": ["A", "B"], "checklist_explanations": ["a", "b"]}),
])
def test_checklist_shapes(tmp_path, checklist, extra):
    record = {"id": 1, "prompt": "p", "discipline": "PHYS", **extra}
    if checklist is not None:
        record["checklist"] = checklist
    rel = BENCH.read_release(write(tmp_path / "nature.json", [record]))
    assert rel.configs["nature"][0]["checklist"] == [{"item": "A", "explanation": "a"}, {"item": "B", "explanation": "b"}]
    assert rel.configs["nature"][0]["extra"] == "{}"  # the checklist fields were all used


def test_items_without_explanations_are_kept_and_reported():
    assert normalize_checklist(["A", "B"]) == [{"item": "A", "explanation": ""}, {"item": "B", "explanation": ""}]


def test_domains_from_keys_fields_and_content(tmp_path):
    data = {"humanities": [{"prompt": "h", "continent": "Europe", "country": "Malta", "checklist": {"x": "y"}}],
            "nature": [{"prompt": "n", "discipline": "astronomy", "checklist": {"x": "y"}}]}
    rel = BENCH.read_release(write(tmp_path / "all.json", data))
    assert rel.configs["humanities"][0]["continent"] == "EU" and rel.configs["nature"][0]["discipline"] == "ASTR"
    # ids generated by position, and reported
    assert rel.configs["humanities"][0]["id"] == "0" and "generated_id" in kinds(rel)
    mixed = [{"id": 1, "prompt": "a", "domain": "Humanities", "continent": "AS", "country": "Nepal", "checklist": {"x": "y"}},
             {"id": 1, "prompt": "b", "discipline": "CHEM", "checklist": {"x": "y"}}]  # no domain field: from content
    rel = BENCH.read_release(write(tmp_path / "mixed.jsonl", "\n".join(json.dumps(r) for r in mixed)))
    assert [len(rel.configs[d]) for d in ("humanities", "nature")] == [1, 1]


def test_anomalies_are_reported_not_hidden(tmp_path):
    records = [
        {"id": 1, "prompt": "a", "continent": "Atlantis", "country": "X", "checklist": {"i": "e"}},
        {"id": 1, "prompt": "b", "continent": "AF", "country": "Mali", "checklist": {"i": "e"}},
        {"id": 2, "prompt": "c", "continent": "AF", "checklist": []},
        {"id": 3, "prompt": "d", "continent": "AF", "country": "Chad", "checklist": ["only an item"]},
    ]
    rel = BENCH.read_release(write(tmp_path / "humanities.json", records))
    rows = rel.configs["humanities"]
    assert rows[0]["continent"] == "Atlantis"  # kept as given
    assert [r["id"] for r in rows] == ["1", "1~2", "2", "3"]  # nothing dropped
    assert kinds(rel) == ["unknown_continent", "duplicate_id", "no_questions", "missing_field", "missing_explanation"]
    by_kind = {a.kind: a for a in rel.anomalies}
    assert by_kind["unknown_continent"].row == "record 0" and by_kind["unknown_continent"].file == "humanities.json"
    rel = BENCH.read_release(write(tmp_path / "nature.json", [{"prompt": "p", "discipline": "Alchemy", "checklist": {"i": "e"}}]))
    assert rel.configs["nature"][0]["discipline"] == "Alchemy" and kinds(rel) == ["unknown_discipline", "generated_id"]


@pytest.mark.parametrize("name, content, kind, detail, quarantined", [
    ("humanities.json", '[{"prompt": "a",', "unreadable_file", "not valid JSON", '[{"prompt": "a",'),
    ("nature.jsonl", '{"prompt": "a", "discipline": "PHYS", "checklist": {"x": "y"}}\n{"prompt": oops}\n',
     "malformed_record", "not valid JSON", '{"prompt": oops}'),
    ("nature.json", [{"prompt": "a", "discipline": "PHYS", "items": ["x", "y"], "explanations": ["z"]}],
     "irregular_checklist", "2 checklist items but 1 explanations", None),
    ("data.json", [{"prompt": "a", "checklist": {"x": "y"}}, {"prompt": "b", "discipline": "PHYS"}],
     "unknown_domain", "cannot tell humanities from nature", '{"prompt": "a", "checklist": {"x": "y"}}'),
    ("nature.json", [{"prompt": "  ", "checklist": {"x": "y"}}, {"prompt": "b"}], "empty_prompt", "no prompt text",
     '{"prompt": "  ", "checklist": {"x": "y"}}'),
    ("nature.json", [{"prompt": "a", "checklist": [{"foo": 1, "bar": 2}]}], "irregular_checklist",
     "checklist entry 1 has no item key", None),
    ("nature.json", [{"prompt": "a"}, 5], "not_a_record", "a int", "5"),
    ("nature.json", [{"prompt": 42, "checklist": [7, None, ["x"]]}], "retyped_value", "prompt is a int", None),
])
def test_irregular_input_is_kept_or_quarantined_and_reported(tmp_path, name, content, kind, detail, quarantined):
    rel = BENCH.read_release(write(tmp_path / name, content))
    found = [a for a in rel.anomalies if a.kind == kind]
    assert found and detail in found[0].detail and found[0].file == name
    assert [q.raw for q in rel.quarantine] == ([quarantined] if quarantined else [])
    assert sum(len(r) for r in rel.configs.values()) >= (0 if kind == "unreadable_file" else 1)


def test_values_of_another_type_are_kept_as_text(tmp_path):
    rel = BENCH.read_release(write(tmp_path / "nature.json", [
        {"id": {"n": 1}, "prompt": 42, "discipline": "PHYS", "checklist": [7, None, ["x"], {"item": 3, "why": True}]}]))
    [row] = rel.configs["nature"]
    assert row["prompt"] == "42" and row["id"] == '{"n": 1}'
    assert [c["item"] for c in row["checklist"]] == ["7", "", '["x"]', "3"]
    assert len([a for a in rel.anomalies if a.kind == "irregular_checklist"]) == 4
    assert json.loads(row["extra"]) == {}


def test_text_is_kept_as_released(tmp_path):
    rel = BENCH.read_release(write(tmp_path / "nature.json", [
        {"prompt": "  a prompt with spaces \t", "discipline": "PHYS", "checklist": [{"item": " x ", "explanation": "y\n"}]}]))
    [row] = rel.configs["nature"]
    assert row["prompt"] == "  a prompt with spaces \t" and row["checklist"] == [{"item": " x ", "explanation": "y\n"}]


def test_empty_files_and_files_that_are_not_data(tmp_path):
    write(tmp_path / "nature.json", [{"prompt": "p", "discipline": "PHYS", "checklist": {"x": "y"}}])
    write(tmp_path / "empty.jsonl", "")
    (tmp_path / "meta").mkdir()
    write(tmp_path / "meta" / "dataset_infos.json", {"size": 3})
    (tmp_path / "evaluate.py").write_text("print('the authors script')\n")
    rel = BENCH.read_release(tmp_path)
    kinds_by_file = {(a.kind, a.file) for a in rel.anomalies}
    assert ("empty_file", "empty.jsonl") in kinds_by_file and ("skipped_file", "meta/dataset_infos.json") in kinds_by_file
    assert rel.files_read == {"nature.json", "empty.jsonl"}  # the script and the metadata file are not data


def test_missing_release(tmp_path):
    with pytest.raises(ReleaseError, match="release not found"):
        BENCH.read_release(tmp_path / "nope")
    with pytest.raises(ReleaseError, match=r"no \.json or \.jsonl file"):
        BENCH.read_release(tmp_path)


# -- the judge request and reply parsing -----------------------------------------------------------------

def test_request_lists_every_item_and_explanation(sample):
    row = sample.configs["nature"][3]
    judge = ScriptedJudge(["[1, 1, 1]"])
    BENCH.score([row], [image()], judge)
    (request,) = judge.requests
    (message,) = request.messages
    assert message.role == "user"
    before, img, after = message.content
    assert img.size == (16, 16)
    for n, c in enumerate(row["checklist"], 1):
        assert f"{n}. Item: {c['item']}\n   Explanation: {c['explanation']}" in before
    assert "**Reverse Verification Requirement**" in before and "N = 3" in before
    assert before.rstrip().endswith("Image")
    assert after.strip() == ("Please evaluate the image strictly following the above procedure and directly "
                             "return the binary list.")


@pytest.mark.parametrize("reply, expected", [
    ("[1, 0, 0]", [1, 0, 0]),
    ("After checking each item: ```json\n[0, 1, 1]\n```", [0, 1, 1]),
    ('{"result": [1, 1, 0]}', [1, 1, 0]),
    ('["1", "0", "1"]', [1, 0, 1]),
    ("[0.9999999999, 1.0000000001, 0.0]", [1, 1, 0]),  # within rounding of 1: 1, never int()'s 0
])
def test_reply_parsing(reply, expected):
    assert parse_checklist_reply(reply, 3) == expected


@pytest.mark.parametrize("reply, message", [
    ("[1, 0]", "expected 3 scores, got 2"),
    ("[1, 0, 2]", "score 3 2 is not one of 0, 1"),
    ("[1, 0, 0.999]", "score 3 0.999 is not one of 0, 1"),  # not rounding: re-asked
    ("[1, 0, 1e-12]", "score 3 1e-12 is not one of 0, 1"),
    ("all satisfied", "no JSON"),
    ('{"a": [1, 0, 0], "b": [1, 1, 1]}', "got an object"),
])
def test_bad_replies_are_rejected(reply, message):
    with pytest.raises(ReplyParseError, match=message):
        parse_checklist_reply(reply, 3)


# -- scoring and the tables --------------------------------------------------------------------------------

def scripted_by_prompt(sample, answers):
    """A judge answering each row's request with answers[prompt start]."""
    rows = sample.configs["humanities"] + sample.configs["nature"]
    items = {r["checklist"][0]["item"]: r["id"] for r in rows}

    def reply(request):
        text = request.messages[0].content[0]
        rid = next(i for item, i in items.items() if f"1. Item: {item}\n" in text)
        return answers[rid]

    return ScriptedJudge(reply)


def test_scores_and_tables_by_hand(sample):
    hum = sample.configs["humanities"][:3]  # AF (3 items), AN (3), AS (4)
    nat = sample.configs["nature"][:2]  # ASTR (3), BIO&MED (3)
    judge = scripted_by_prompt(sample, {"0": "[1, 1, 0]", "1": "[0, 0, 0]", "2": "[1, 1, 1, 1]",
                                        "n0": "[1, 0, 0]", "n1": "[0, 1, 1]"})
    results = BENCH.score(hum + nat, [image() for _ in range(5)], judge)
    assert len(judge.requests) == 5
    assert [r.score for r in results] == pytest.approx([2 / 3, 0, 1, 1 / 3, 2 / 3])
    assert [r.id for r in results] == ["humanities-0", "humanities-1", "humanities-2", "nature-n0", "nature-n1"]
    first = results[0]
    assert [q.score for q in first.questions] == [1, 1, 0] and first.questions[2].criterion.startswith("The tanneries")
    assert first.subscores == {"satisfied": 2.0, "items": 3.0} and first.replies == ["[1, 1, 0]"]
    assert first.context["continent"] == "AF" and first.config == "humanities"

    table = BENCH.aggregate(results, n_resamples=200)
    assert table["humanities"] == pytest.approx(100 * (2 / 3 + 0 + 1) / 3)
    assert table["nature"] == pytest.approx(100 * (1 / 3 + 2 / 3) / 2)
    assert table["knowledge_checklist_score"] == pytest.approx(100 * (2 / 3 + 1 + 1 / 3 + 2 / 3) / 5)
    assert table["by_continent"]["AF"] == pytest.approx(200 / 3) and table["by_continent"]["AN"] == 0
    assert table["by_continent"]["EU"] is None and table["by_discipline"]["BIO&MED"] == pytest.approx(200 / 3)
    assert list(table["table"]["humanities"]) == ["AF", "AN", "AS", "EU", "NA", "OC", "SA", "Avg."]
    assert list(table["table"]["nature"]) == ["ASTR", "BIO&MED", "CHEM", "EASC", "PHYS", "XDIS", "Avg."]
    overall = table["summary"]["overall"]
    assert overall["n"] == 5 and overall["failed"] == 0 and overall["ci_low"] <= overall["mean"] <= overall["ci_high"]


def test_reask_then_failure_is_counted(sample):
    rows = sample.configs["humanities"][:2]
    replies = iter(["[1, 0]", "I cannot tell.", "[1, 1, 1]", "nope", "still nope"])
    judge = ScriptedJudge(lambda request: next(replies))
    results = BENCH.score(rows, [image(), image("blue")], judge, max_reasks=2)
    ok, failed = results
    # round 1: both fail ("[1, 0]" is short, "I cannot tell." has no list); round 2: first fixed, second not
    assert ok.score == 1.0 and ok.reasks == 1 and ok.replies == ["[1, 0]", "[1, 1, 1]"]
    reask = judge.requests[2]
    assert [m.role for m in reask.messages] == ["user", "assistant", "user"]
    assert "expected 3 scores, got 2" in reask.messages[2].text
    assert failed.score is None and failed.reasks == 2 and len(failed.replies) == 3
    assert "no JSON" in failed.failure and all(q.score is None for q in failed.questions)
    table = BENCH.aggregate(results, n_resamples=100)
    assert table["summary"]["overall"]["failed"] == 1 and table["knowledge_checklist_score"] == 100.0


def test_backend_errors_and_rows_without_checklist_fail_visibly(sample):
    row = dict(sample.configs["nature"][0])
    empty = dict(row, id="x", checklist=[])
    judge = ScriptedJudge([Reply(text="", model="m", sampling={}, error="HTTP 500"), "[1, 1, 0]"])
    results = BENCH.score([row, empty], [image(), image()], judge)
    assert results[0].score is None and results[0].replies == ["[judge error] HTTP 500"]  # recorded, not re-sent
    assert "judge error: HTTP 500" in results[0].failure
    assert results[1].score is None and results[1].failure == "the row has no checklist items"
    assert len(judge.requests) == 1  # the empty row was never sent


def test_each_image_is_encoded_once(sample, monkeypatch):
    """A judge that encodes like the API backends: re-asks reuse the same JudgeImage."""
    rows = sample.configs["humanities"][:2]
    saves = []
    original = Image.Image.save
    monkeypatch.setattr(Image.Image, "save", lambda self, *a, **k: (saves.append(1), original(self, *a, **k))[1])
    replies = iter(["bad", "[1, 1, 1]", "[0, 0, 0]"])

    def encode_then_reply(request):
        for img in request.images:
            img.data_url("JPEG")
        return next(replies)

    judge = ScriptedJudge(encode_then_reply)
    BENCH.score(rows, [image(), image("blue")], judge)
    assert len(judge.requests) == 3 and len(saves) == 2
    assert judge.requests[0].images[0] is judge.requests[2].images[0]


def test_options_are_checked(sample):
    with pytest.raises(TypeError, match="unknown WorldGenBench option"):
        BENCH.score(sample.configs["nature"][:1], [image()], ScriptedJudge(["[1,1,1]"]), max_reask=1)
    with pytest.raises(ValueError, match="got 1 rows but 2 images"):
        BENCH.score(sample.configs["nature"][:1], [image(), image()], ScriptedJudge([]))


def test_paper_preset():
    preset = BENCH.presets["paper"]
    assert preset["judge"] == "openai:gpt-4o" and preset["judge_kwargs"]["sampling"].temperature == 0


def test_an_unreadable_image_fails_alone_and_transient_failures_are_retryable(sample, tmp_path):
    rows = sample.configs["nature"][:4]
    good = tmp_path / "good.png"
    image().save(good)
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "cut.png").write_bytes(good.read_bytes()[:-25])
    transient = Reply(text="", model="m", sampling={}, error="connection refused", transient=True)
    judge = ScriptedJudge(["[1, 1, 1]", transient])
    results = BENCH.score(rows, [good, tmp_path / "empty.png", tmp_path / "cut.png", good], judge)
    assert results[0].score == 1.0 and len(judge.requests) == 2
    assert results[1].failure.startswith("image: ") and "empty" in results[1].failure and not results[1].retryable
    assert results[2].failure.startswith("image: ") and results[2].image == str(tmp_path / "cut.png")
    assert results[3].score is None and results[3].retryable and "connection refused" in results[3].failure
