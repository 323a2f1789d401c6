"""Every benchmark's shipped sample built end to end into a Hub folder: every config loads offline
with ``load_dataset`` and gives back the reader's rows, ``build_report.json`` carries the reader's
counts and every anomaly, the card's YAML parses with huggingface_hub's card classes and has the
Hub's required keys, and benchmarks scored by a metric get an ``eval.yaml``."""

import hashlib
import io
import json

import datasets
import pytest
import yaml
from huggingface_hub import DatasetCard, DatasetCardData
from PIL import Image

from t2ireason import build
from t2ireason.benchmarks import MODULES, get_benchmark

#: a license for the samples whose benchmark has none known (the builder never invents one)
GIVEN_LICENSE = "cc-by-4.0"


@pytest.fixture(scope="module", params=list(MODULES))
def built(request, tmp_path_factory):
    bench = get_benchmark(request.param)
    release = bench.read_release(bench.sample_path())
    out = tmp_path_factory.mktemp(bench.name) / "hub"
    license = None if (bench.license or release.license) else GIVEN_LICENSE
    report = build.build_dataset(bench, bench.sample_path(), out, repo_id=f"me/{bench.name}", license=license)
    return bench, release, out, report


def _plain(value):
    """Rows compared as plain values, images (decoded, or as {bytes, path} dicts) by their pixels."""
    if isinstance(value, dict) and set(value) == {"bytes", "path"}:
        value = Image.open(io.BytesIO(value["bytes"]) if value["bytes"] else value["path"])
    if isinstance(value, Image.Image):
        return {"size": list(value.size), "pixels": hashlib.sha256(value.convert("RGB").tobytes()).hexdigest()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_every_config_loads_offline_with_the_readers_rows(built):
    bench, release, out, report = built
    configs = [c for c in bench.configs if c in release.configs]
    assert list(report.configs) == configs and report.absent_configs == [c for c in bench.configs if c not in configs]
    for config in configs:
        features = bench.config_features(config)
        loaded = datasets.load_dataset(str(out), config, split=bench.split)
        assert loaded.features == features, config
        expected = datasets.Dataset.from_list(release.configs[config], features=features)
        assert _plain(loaded.to_list()) == _plain(expected.to_list()), config
        assert report.configs[config] == {"rows": len(release.configs[config]),
                                          **{k: v for k, v in release.counts.get(config, {}).items() if k != "rows"}}


def test_build_report_keeps_every_anomaly(built):
    bench, release, out, report = built
    saved = json.loads((out / "build_report.json").read_text())
    assert saved["configs"] == report.configs and saved["benchmark"] == bench.name
    assert saved["anomalies"] == [a.to_dict() for a in release.anomalies]
    assert saved["quarantine"] == [q.to_dict() for q in release.quarantine]
    assert saved["renamed"] == [] and saved["normalization"] == {} and saved["source_info"]["kind"] == "folder"
    if release.files_read is not None:  # every file of the sample is read or listed as not read
        files = {p.relative_to(bench.sample_path()).as_posix() for p in bench.sample_path().rglob("*") if p.is_file()}
        assert files == release.files_read | set(saved["ignored_files"])
    assert sorted(saved["files"]) == sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())


def test_card_yaml_has_the_hubs_required_keys(built):
    bench, release, out, report = built
    card = DatasetCard.load(out / "README.md")
    data = card.data
    assert isinstance(data, DatasetCardData)
    assert data.pretty_name == bench.pretty_name
    assert data.license == (bench.license or release.license or GIVEN_LICENSE) == report.license
    assert data.task_categories == ["text-to-image"]
    assert data.size_categories == [build.size_category(max(len(r) for r in release.configs.values()))]
    configs = {c["config_name"]: c for c in data["configs"]}
    assert set(configs) == set(report.configs)
    # load_dataset(<folder>) with no config name gives the whole benchmark where a config holds it
    default = "all" if "all" in report.configs else next(iter(report.configs))
    assert [n for n, c in configs.items() if c.get("default")] == [default]
    assert data.language == list(bench.language)
    # evaluation sets have a test split; FLUX-Reason-6M, a training set, the engine's train split
    assert bench.split == ("train" if bench.name == "flux-reason-6m" else "test")
    assert all(c["data_files"] == [{"split": bench.split, "path": f"{name}/{bench.split}-*"}]
               for name, c in configs.items())
    assert sorted(p.name for p in out.rglob("*.parquet")) == [f"{bench.split}-00000-of-00001.parquet"] * len(configs)
    infos = data["dataset_info"]
    # one config: a dict, and no config_name for "default"
    infos = {i.get("config_name", "default"): i for i in (infos if isinstance(infos, list) else [infos])}
    for name in report.configs:
        assert datasets.Features._from_yaml_list(infos[name]["features"]) == bench.config_features(name)
        assert infos[name]["splits"][0]["num_examples"] == report.configs[name]["rows"]
    body = card.text
    assert f'load_dataset("me/{bench.name}"' in body
    assert bench.citation.strip().splitlines()[0] in body
    for field in bench.config_features(next(iter(report.configs))):
        assert f"`{field}`" in body, field
    if bench.metric:
        assert bench.metric in body


def test_eval_yaml_where_a_metric_scores_the_benchmark(built):
    bench, release, out, report = built
    path = out / "eval.yaml"
    if not bench.metric:
        assert not path.exists()
        return
    ev = yaml.safe_load(path.read_text())
    assert ev["name"] == bench.pretty_name and ev["evaluation_framework"] == "t2i-reason"
    assert ev["tasks"] == [{"id": c, "config": c, "split": "test"} for c in report.configs]
