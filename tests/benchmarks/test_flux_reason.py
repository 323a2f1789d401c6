"""FLUX-Reason-6M: the streaming reader on the shipped sample and on other published shapes, and the build."""

import json

import datasets
import pytest
from huggingface_hub import DatasetCard
from PIL import Image

from t2ireason import build
from t2ireason.benchmarks import flux_reason as fr
from t2ireason.benchmarks import get_benchmark

BENCH = get_benchmark("flux-reason-6m")


@pytest.fixture
def load_spy(monkeypatch):
    """Records how load_dataset is called: the reader must stream, never download whole."""
    calls = []
    real = datasets.load_dataset

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(fr.datasets, "load_dataset", spy)
    return calls


def test_streams_the_sample(load_spy):
    anomalies = []
    rows = list(fr.stream(BENCH.sample_path(), anomalies=anomalies))
    assert load_spy and all(kw.get("streaming") is True for _, kw in load_spy)
    assert [r["id"] for r in rows] == [f"fr6m-00000{i}" for i in range(1, 7)]
    by_id = {r["id"]: r for r in rows}
    third = by_id["fr6m-000003"]
    assert third["characteristics"] == ["text_rendering", "composition"]
    assert "'FRESH BREAD DAILY'" in third["captions"]["text_rendering"]
    assert "FRESH BREAD DAILY" in third["captions_zh"]["text_rendering"]  # the string to render stays English
    assert third["captions"]["entity"] is None and third["original_caption"] is None
    assert third["gcot"].startswith("Step 1") and third["gcot_zh"].startswith("第一步")
    assert by_id["fr6m-000002"]["original_caption"] == "colosseum rome oil painting sunset canvas print"
    assert by_id["fr6m-000002"]["source"] == "laion"
    image = third["image"]
    assert isinstance(image, dict) and (image["bytes"] or Image.open(image["path"]).size == (32, 32))  # undecoded
    assert anomalies == []
    assert BENCH.prompt(third) == third["captions"]["text_rendering"]

    assert [r["id"] for r in fr.stream(BENCH.sample_path(), limit=2)] == ["fr6m-000001", "fr6m-000002"]


def _png(path, colour):
    Image.new("RGB", (4, 4), colour).save(path)
    return path


def test_separate_columns_booleans_and_scores(tmp_path):
    """Variant: one column per characteristic (booleans, scores, captions), other names, Parquet."""
    src = tmp_path / "variant"
    (src / "data").mkdir(parents=True)
    features = datasets.Features({
        "key": datasets.Value("string"), "jpg": datasets.Image(),
        "Imagination": datasets.Value("bool"), "is_entity": datasets.Value("bool"),
        "style_score": datasets.Value("float32"),
        "entity_caption": datasets.Value("string"), "caption_imagination": datasets.Value("string"),
        "entity_caption_zh": datasets.Value("string"),
        "GCoT": datasets.Value("string"), "GCoT_cn": datasets.Value("string"),
        "laion_caption": datasets.Value("string"), "aesthetic": datasets.Value("float32"),
    })
    rows = {
        "key": ["k1", "k2"], "jpg": [str(_png(tmp_path / "a.png", (1, 2, 3))), None],
        "Imagination": [True, False], "is_entity": [True, True], "style_score": [8.0, 2.5],
        "entity_caption": ["A Vespa scooter.", "The Sydney Opera House."], "caption_imagination": ["A flying Vespa.", None],
        "entity_caption_zh": ["一辆韦士柏摩托车。", None],
        "GCoT": ["Step 1: a scooter.", "Step 1: an opera house."], "GCoT_cn": ["第一步：一辆摩托车。", None],
        "laion_caption": ["vespa flying sky", None], "aesthetic": [6.1, 5.0],
    }
    datasets.Dataset.from_dict(rows, features=features).to_parquet(src / "data" / "train-00000-of-00001.parquet")

    release = BENCH.read_release(src)
    first, second = release.configs["default"]
    assert first["id"] == "k1" and first["characteristics"] == ["imagination", "entity"]  # booleans win
    assert second["characteristics"] == ["entity"]
    assert first["characteristic_scores"]["style"] == 8.0 and first["characteristic_scores"]["entity"] is None
    assert first["captions"]["imagination"] == "A flying Vespa." and first["captions"]["entity"] == "A Vespa scooter."
    assert first["captions_zh"]["entity"] == "一辆韦士柏摩托车。" and first["gcot_zh"] == "第一步：一辆摩托车。"
    assert first["original_caption"] == "vespa flying sky"
    kinds = [(a.kind, a.detail) for a in release.anomalies]
    assert ("unmapped_column", "column 'aesthetic' is not read; map it with mapping={field: 'aesthetic'}") in kinds
    assert [a.row for a in release.anomalies if a.kind == "missing_image"] == [1]
    assert release.counts["default"]["entity"] == 2 and release.counts["default"]["imagination"] == 1

    # the overridable mapping: read the aesthetic column as the source field instead
    remapped = BENCH.read_release(src, mapping={"source": "aesthetic"})
    assert not [a for a in remapped.anomalies if a.kind == "unmapped_column"]
    with pytest.raises(ValueError, match=r"unknown mapping entries \['gcot_column'\]"):
        BENCH.read_release(src, mapping={"gcot_column": "GCoT"})


def test_nested_captions_scores_and_thresholds(tmp_path):
    """Variant: JSONL, captions as {"en": {...}, "zh": {...}}, labels as a dict of scores, no id column."""
    src = tmp_path / "jsonl"
    src.mkdir()
    _png(src / "x.png", (9, 9, 9))
    records = [
        {"image_path": "x.png", "scores": {"Entity": 8.5, "Style": 3.0},
         "captions": {"en": {"Entity": "Big Ben at noon.", "Style": "Pencil sketch."},
                      "zh": {"Entity": "正午的大本钟。", "Style": "铅笔素描。"}},
         "labels": ["Entity", "Long text"]},
        {"image_path": "x.png", "scores": {"Entity": 5.0, "Style": 9.0},
         "captions": {"en": {"Entity": None, "Style": "Ukiyo-e print."}, "zh": {"Entity": None, "Style": "浮世绘。"}},
         "labels": None},
    ]
    (src / "train.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records))

    release = BENCH.read_release(src)
    first, second = release.configs["default"]
    assert first["id"] == "train-0" and second["id"] == "train-1"
    assert first["characteristics"] == ["entity"]  # explicit labels; "Long text" is not a characteristic
    assert second["characteristics"] == ["style"]  # no labels, no thresholds: the characteristics with a caption
    assert first["captions_zh"] == {**dict.fromkeys(fr.CHARACTERISTICS), "entity": "正午的大本钟。", "style": "铅笔素描。"}
    assert first["characteristic_scores"]["entity"] == 8.5
    assert Image.open(first["image"]["path"] if isinstance(first["image"], dict) else first["image"]).size == (4, 4)
    kinds = {a.kind: a for a in release.anomalies}
    assert kinds["unknown_label"].row == 0 and "'Long text'" in kinds["unknown_label"].detail
    assert kinds["generated_id"].detail == "no id column; ids are train-<row index>"

    # scores only: labels from the thresholds the user gives
    for r in records:
        r.pop("labels")
    (src / "train.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records))
    rows = BENCH.read_release(src, mapping={"thresholds": {"Entity": 7, "style": 7}}).configs["default"]
    assert [r["characteristics"] for r in rows] == [["entity"], ["style"]]


def test_build_the_sample(tmp_path):
    out = tmp_path / "flux"
    report = build.build_dataset("flux-reason-6m", BENCH.sample_path(), out, repo_id="me/flux-sample")
    ds = datasets.load_dataset(str(out), "default", split="train")
    assert ds.num_rows == 6 and ds.features == fr.FEATURES
    assert ds[3]["characteristics"] == ["affection"] and ds[3]["image"].size == (32, 32)
    assert report.configs["default"]["rows"] == 6 and report.configs["default"]["gcot"] == 6
    assert report.anomalies == [] and report.undocumented_fields == []
    card = DatasetCard.load(out / "README.md")
    assert card.data.license == "apache-2.0" and card.data.pretty_name == "FLUX-Reason-6M"
    assert "| `captions.text_rendering` | string | Text rendering: caption |" in card.text
    assert not (out / "eval.yaml").exists()  # a training set: no benchmark registration


def test_missing_local_source(tmp_path):
    with pytest.raises(FileNotFoundError, match="FLUX-Reason-6M source not found: .*nowhere/here"):
        BENCH.read_release(tmp_path / "nowhere" / "here")
