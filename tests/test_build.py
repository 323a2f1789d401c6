"""The dataset builder and publisher, exercised with a toy benchmark of this file (no other module needed)."""

import json
import sys
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml
from huggingface_hub import DatasetCard, DatasetCardData
from PIL import Image

from t2ireason import build
from t2ireason.benchmarks import Anomaly, Benchmark, OfficialRelease, Release, ReleaseError, get_benchmark
from t2ireason.commands import datasets as commands
from t2ireason.files import inside

FEATURES = datasets.Features({
    "id": datasets.Value("string"),
    "prompt": datasets.Value("string"),
    "image": datasets.Image(),
    "questions": datasets.List({"question": datasets.Value("string"), "weight": datasets.Value("float32")}),
})


class Toy(Benchmark):
    """Reads ``<config>.json`` files: lists of {id, prompt, image (file name), questions}."""

    name = "toy-bench"
    pretty_name = "Toy Bench"
    configs = ("alpha", "beta", "gamma")
    metric = "toy_metric"
    license = "cc-by-4.0"
    citation = "@article{toy2025, title={Toy}, year={2025}}"
    description = "A toy benchmark for the builder's tests."
    scoring = "Each question is judged 0 or 1; the image score is the weighted mean."
    field_docs = {"id": "unique id", "prompt": "what to draw", "image": "a reference image",
                  "questions": "what the judge is asked", "questions.question": "the question text"}

    @property
    def features(self):
        return FEATURES

    def read_release(self, source, **options):
        source = Path(source)
        configs, anomalies, counts = {}, [], {}
        for config in self.configs:
            path = source / f"{config}.json"
            if not path.exists():
                continue
            rows = json.loads(path.read_text())
            for i, row in enumerate(rows):
                if row.get("image"):
                    row["image"] = str(source / row["image"])
                if not row["questions"]:
                    anomalies.append(Anomaly("no_questions", path.name, i, "kept with an empty list"))
            configs[config] = rows[: options.get("limit")]
            counts[config] = {"questions": sum(len(r["questions"]) for r in rows)}
        return Release(configs=configs, anomalies=anomalies, counts=counts)


@pytest.fixture
def toy_release(tmp_path):
    src = tmp_path / "release"
    src.mkdir()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(src / "red.png")
    alpha = [{"id": f"a{i}", "prompt": f"prompt {i}", "image": "red.png",
              "questions": [{"question": f"q{i}.{j}", "weight": float(j)} for j in range(i % 3)]}
             for i in range(5)]
    beta = [{"id": "b0", "prompt": "a blue cube", "image": None, "questions": [{"question": "cube?", "weight": 1}]}]
    (src / "alpha.json").write_text(json.dumps(alpha))
    (src / "beta.json").write_text(json.dumps(beta))
    return src


def test_build_end_to_end(toy_release, tmp_path):
    out = tmp_path / "out"
    report = build.build_dataset(Toy(), toy_release, out, repo_id="me/toy")

    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(report.files)
    alpha = datasets.load_dataset(str(out), "alpha", split="test")
    assert alpha["id"] == [f"a{i}" for i in range(5)]
    assert [len(q) for q in alpha["questions"]] == [0, 1, 2, 0, 1]
    assert alpha[2]["questions"][1] == {"question": "q2.1", "weight": 1.0}
    img = alpha[0]["image"]
    assert img.size == (8, 8) and img.getpixel((0, 0)) == (200, 10, 10)  # bytes embedded, not a path
    beta = datasets.load_dataset(str(out), "beta", split="test")
    assert beta[0]["image"] is None and beta.features == FEATURES

    # counts and anomalies: in the report object, the JSON file and the summary
    assert report.configs == {"alpha": {"rows": 5, "questions": 4}, "beta": {"rows": 1, "questions": 1}}
    assert report.absent_configs == ["gamma"]
    assert report.anomaly_counts() == {"no_questions": 2}
    saved = json.loads((out / "build_report.json").read_text())
    assert saved["configs"] == report.configs and len(saved["anomalies"]) == 2
    assert saved["anomalies"][0] == {"kind": "no_questions", "file": "alpha.json", "row": 0,
                                     "detail": "kept with an empty list"}
    summary = report.summary()
    assert "alpha: 5 rows, questions 4" in summary and "no_questions: 2 (first: alpha.json row 0" in summary
    assert "questions.weight" in report.undocumented_fields and "id" not in report.undocumented_fields


def test_card_metadata(toy_release, tmp_path):
    out = tmp_path / "out"
    build.build_dataset(Toy(), toy_release, out, repo_id="me/toy", evaluation_framework="inspect-ai")
    card = DatasetCard.load(out / "README.md")
    data = card.data
    assert isinstance(data, DatasetCardData)
    assert data.pretty_name == "Toy Bench" and data.license == "cc-by-4.0"
    assert data.task_categories == ["text-to-image"] and data.size_categories == ["n<1K"]
    configs = {c["config_name"]: c for c in data["configs"]}
    assert configs["alpha"]["data_files"] == [{"split": "test", "path": "alpha/test-*"}]
    assert configs["alpha"].get("default") is True and "gamma" not in configs  # no "all": the first config
    assert data.language == ["en"]
    infos = {i["config_name"]: i for i in data["dataset_info"]}
    assert datasets.Features._from_yaml_list(infos["beta"]["features"]) == FEATURES
    assert infos["alpha"]["splits"] == [{"name": "test", "num_bytes": infos["alpha"]["splits"][0]["num_bytes"],
                                         "num_examples": 5}]
    body = card.text
    assert 'load_dataset("me/toy", "alpha", split="test")' in body
    assert "| `questions.question` | string | the question text |" in body
    assert "| `image` | image | a reference image |" in body
    assert "toy_metric" in body and "weighted mean" in body and "@article{toy2025" in body
    assert "| `no_questions` | 2 |" in body

    # eval.yaml: the Hub's benchmark registration, one task per config, under a framework the Hub lists
    ev = yaml.safe_load((out / "eval.yaml").read_text())
    assert ev["name"] == "Toy Bench" and ev["evaluation_framework"] == "inspect-ai"
    assert ev["tasks"] == [{"id": "alpha", "config": "alpha", "split": "test"},
                           {"id": "beta", "config": "beta", "split": "test"}]
    assert "weighted mean" in ev["description"]


# ---------------------------------------------------------------------------------------------- bad input

def test_eval_yaml_only_under_a_framework_the_hub_lists(toy_release, tmp_path):
    # the Hub refuses an eval.yaml whose evaluation_framework it does not list: none by default ...
    build.build_dataset(Toy(), toy_release, tmp_path / "plain")
    assert not (tmp_path / "plain" / "eval.yaml").exists()
    assert ".eval_results/" in (tmp_path / "plain" / "README.md").read_text()
    # ... and one it does not list is refused before anything is written
    with pytest.raises(build.BuildError, match="'t2i-reason' is not one the Hub lists for eval.yaml .*inspect-ai"):
        build.build_dataset(Toy(), toy_release, tmp_path / "other", evaluation_framework="t2i-reason")
    assert not (tmp_path / "other").exists()


def test_missing_source(tmp_path):
    with pytest.raises(FileNotFoundError, match="release folder not found: .*nowhere"):
        build.build_dataset(Toy(), tmp_path / "nowhere", tmp_path / "out")


def test_unknown_benchmark(toy_release, tmp_path):
    with pytest.raises(KeyError, match="unknown benchmark 'no-such-bench'; known: t2i-reasonbench"):
        build.build_dataset("no-such-bench", toy_release, tmp_path / "out")


def test_license_never_invented(toy_release, tmp_path):
    class NoLicense(Toy):
        license = None

    with pytest.raises(build.BuildError, match="pass --license"):
        build.build_dataset(NoLicense(), toy_release, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    report = build.build_dataset(NoLicense(), toy_release, tmp_path / "out", license="mit")
    assert report.license == "mit"
    assert DatasetCard.load(tmp_path / "out" / "README.md").data.license == "mit"


def test_output_folder_protection(toy_release, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(build.BuildError, match="not empty; pass --overwrite"):
        build.build_dataset(Toy(), toy_release, out)
    with pytest.raises(build.BuildError, match="not written by this builder"):
        build.build_dataset(Toy(), toy_release, out, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"

    out2 = tmp_path / "out2"
    build.build_dataset(Toy(), toy_release, out2)
    (toy_release / "beta.json").unlink()
    report = build.build_dataset(Toy(), toy_release, out2, overwrite=True)
    assert list(report.configs) == ["alpha"] and not (out2 / "beta").exists()


def test_rows_that_do_not_fit_are_quarantined_not_a_stop(toy_release, tmp_path):
    rows = json.loads((toy_release / "alpha.json").read_text())
    rows[3]["questions"] = "not a list"
    rows[4]["colour"] = "red"
    (toy_release / "alpha.json").write_text(json.dumps(rows))
    report = build.build_dataset(Toy(), toy_release, tmp_path / "out")
    assert report.configs["alpha"]["rows"] == 4  # a0, a1, a2 and a4; a3 could not be kept
    [bad] = report.quarantine
    assert bad["file"] == "config alpha" and bad["row"] == "a3" and "does not fit the schema" in bad["reason"]
    assert json.loads(bad["raw"])["questions"] == "not a list"  # the record as it was, to recover by hand
    [extra] = [a for a in report.anomalies if a["kind"] == "unknown_field"]
    assert extra["row"] == "a4" and '"colour": "red"' in extra["detail"]
    saved = json.loads((tmp_path / "out" / "build_report.json").read_text())
    assert saved["quarantine"] == report.quarantine and "1 record(s) quarantined" in report.summary()
    assert "1 record(s) could not be kept" in (tmp_path / "out" / "README.md").read_text()

    with pytest.raises(build.BuildError, match=r"--strict: the release has 2 anomalies and 1 quarantined"):
        build.build_dataset(Toy(), toy_release, tmp_path / "strict", strict=True)
    assert not (tmp_path / "strict").exists()


def test_a_missing_image_file_names_the_config(toy_release, tmp_path):
    rows = json.loads((toy_release / "alpha.json").read_text())
    rows[1]["image"] = "missing.png"
    (toy_release / "alpha.json").write_text(json.dumps(rows))
    with pytest.raises(ReleaseError, match="cannot embed a file.*missing.png"):
        build.build_dataset(Toy(), toy_release, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written is left behind
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_text_normalisation_is_an_option_and_reported(toy_release, tmp_path):
    rows = json.loads((toy_release / "alpha.json").read_text())
    rows[0]["prompt"] = "  cafe\u0301 at dawn \n"
    (toy_release / "alpha.json").write_text(json.dumps(rows))
    kept = build.build_dataset(Toy(), toy_release, tmp_path / "asis")
    assert datasets.load_dataset(str(tmp_path / "asis"), "alpha", split="test")[0]["prompt"] == "  cafe\u0301 at dawn \n"
    assert kept.normalization == {} and "kept byte for byte" in (tmp_path / "asis" / "README.md").read_text()
    report = build.build_dataset(Toy(), toy_release, tmp_path / "norm", normalize=["strip", "nfc"])
    assert datasets.load_dataset(str(tmp_path / "norm"), "alpha", split="test")[0]["prompt"] == "caf\u00e9 at dawn"
    assert report.normalization == {"applied": ["strip", "nfc"], "values_changed": 1}
    assert "text normalised (strip, nfc): 1 value(s) changed" in report.summary()
    with pytest.raises(build.BuildError, match="unknown text normalisation"):
        build.build_dataset(Toy(), toy_release, tmp_path / "bad", normalize=["lower"])


@pytest.mark.parametrize("bad_id", ["../../outside/x", "/etc/passwd", "a/../../b", "..", "", "tab\there", "x" * 300])
def test_ids_that_cannot_be_file_names_are_mapped_or_refused(toy_release, tmp_path, bad_id):
    rows = json.loads((toy_release / "alpha.json").read_text())
    rows[2]["id"] = bad_id
    (toy_release / "alpha.json").write_text(json.dumps(rows))
    report = build.build_dataset(Toy(), toy_release, tmp_path / "mapped")
    [renamed] = report.renamed
    assert renamed["original"] == bad_id and renamed["field"] == "id" and renamed["config"] == "alpha"
    ids = pq.read_table(tmp_path / "mapped" / "alpha" / "test-00000-of-00001.parquet").column("id").to_pylist()
    assert ids[2] == renamed["safe"] and "/" not in ids[2] and not ids[2].startswith(".") and ids[2]
    out = tmp_path / "images"
    assert inside(out, Toy().image_path({"id": ids[2], "config": "alpha"}))  # stays inside
    assert [a["kind"] for a in report.anomalies].count("unsafe_id") == 1
    assert renamed["safe"] == build.safe_name(bad_id)

    refused = build.build_dataset(Toy(), toy_release, tmp_path / "refused", unsafe_ids="refuse")
    assert refused.renamed == [] and refused.configs["alpha"]["rows"] == 4
    assert [q["row"] for q in refused.quarantine] == [bad_id]


def test_files_not_read_are_listed_with_the_authors_scripts_named(toy_release, tmp_path):
    class WithScripts(Toy):
        official_release = OfficialRelease("github", "toy/toy-bench", "0" * 40, scripts=("eval/score.py",))

        def read_release(self, source, **options):
            release = super().read_release(source, **options)
            release.files_read = {"alpha.json", "beta.json", "red.png"}
            return release

    (toy_release / "eval").mkdir()
    (toy_release / "eval" / "score.py").write_text("print('how the authors score')\n")
    (toy_release / "NOTES.txt").write_text("notes\n")
    (toy_release / ".git").mkdir()
    (toy_release / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    out = tmp_path / "out"
    report = build.build_dataset(WithScripts(), toy_release, out)
    assert report.ignored_files == ["NOTES.txt", "eval/score.py"]  # hidden folders are not looked into
    assert report.authors_scripts == ["eval/score.py"]
    saved = json.loads((out / "build_report.json").read_text())
    assert (saved["ignored_files"], saved["authors_scripts"]) == (report.ignored_files, report.authors_scripts)
    assert "the authors' scripts, not read: eval/score.py" in report.summary()
    assert "1 other file(s) of the release not read (not data): NOTES.txt" in report.summary()
    card = " ".join((out / "README.md").read_text().split())
    assert "2 file(s) of the release are not data and were not read, among them the authors' own scripts " \
           "(`eval/score.py`)" in card
    plain = build.build_dataset(Toy(), toy_release, tmp_path / "plain")  # a reader that does not say what it read
    assert plain.ignored_files == plain.authors_scripts == []


def test_a_source_with_no_rows_says_what_it_lacks_and_what_it_holds(tmp_path):
    # an early layout of T2I-ReasonBench: one prompt per line in text files, beside the scripts
    old = tmp_path / "T2I-ReasonBench-early"
    (old / "prompts").mkdir(parents=True)
    (old / "prompts/Idiom_Interpretation_prompts.txt").write_text("A prompt\n")
    (old / "eval_idiom.py").write_text("pass\n")
    bench = get_benchmark("t2i-reasonbench")
    with pytest.raises(ReleaseError) as err:
        build.build_dataset(bench, old, tmp_path / "out", license="other")
    message = str(err.value)
    assert "no rows read" in message and "T2I-ReasonBench release?" in message
    assert "It lacks prompts/idiom_interpretation.json, deepseek_evaluation_qs/evaluation_idiom.json" in message
    assert message.endswith("It holds eval_idiom.py, prompts/Idiom_Interpretation_prompts.txt.")
    assert not (tmp_path / "out").exists()


def test_an_image_path_the_benchmark_refuses_is_never_written_through(toy_release, tmp_path):
    from t2ireason.files import UnsafePath

    class Checked(Toy):
        def image_path(self, row, sample=0):
            if row["id"] == "a2":
                raise UnsafePath(f"id {row['id']!r} would leave the folder")
            return super().image_path(row, sample)

    report = build.build_dataset(Checked(), toy_release, tmp_path / "out")
    assert report.configs["alpha"]["rows"] == 4
    [lost] = report.quarantine
    assert lost["row"] == "a2" and "would leave the folder" in lost["reason"] and json.loads(lost["raw"])["id"] == "a2"


def test_default_config_and_language_in_the_card(toy_release, tmp_path):
    class WithAll(Toy):
        configs = ("alpha", "beta", "all")
        language = ("en", "zh")

        def read_release(self, source, **options):
            release = super().read_release(source, **options)
            release.configs["all"] = release.configs["alpha"] + release.configs["beta"]
            return release

    out = tmp_path / "out"
    build.build_dataset(WithAll(), toy_release, out, repo_id="me/toy")
    data = DatasetCard.load(out / "README.md").data
    assert [c["config_name"] for c in data["configs"] if c.get("default")] == ["all"]
    assert data.language == ["en", "zh"]
    assert len(datasets.load_dataset(str(out), split="test")) == 6  # no config name: the whole benchmark
    assert 'load_dataset("me/toy", "all", split="test")' in (out / "README.md").read_text()


def test_cli_reports_errors_in_one_line(tmp_path, capsys):
    code = commands.main(commands.add_build_args, commands.run_build,
                      ["mt2ie", "--source", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"error: release folder not found: {tmp_path / 'nowhere'}"
    code = commands.main(commands.add_build_args, commands.run_build,
                      ["nope", "--source", str(tmp_path), "--out", str(tmp_path / "o")])
    assert code == 2 and "unknown benchmark 'nope'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- publishing

SECRET = "hf_do_not_print_this_token_123456"


@pytest.fixture
def built(toy_release, tmp_path):
    out = tmp_path / "built"
    build.build_dataset(Toy(), toy_release, out, repo_id="me/toy", evaluation_framework="inspect-ai")
    (out / ".cache").mkdir()
    (out / ".cache" / "junk").write_text("x")  # hidden files are never uploaded
    return out


def _run_push(argv, monkeypatch):
    import runpy

    monkeypatch.setattr(sys, "argv", ["push.py", *argv])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(Path(__file__).parents[1] / "datasets_scripts" / "push.py"), run_name="__main__")
    return exit_info.value.code


def test_push_dry_run_lists_files_and_sends_nothing(built, monkeypatch, capsys):
    from huggingface_hub import HfApi

    def refuse(*args, **kwargs):
        raise AssertionError("a dry run must not reach the Hub")

    monkeypatch.setattr(HfApi, "create_repo", refuse)
    monkeypatch.setattr(HfApi, "upload_folder", refuse)
    assert _run_push([str(built), "--repo", "me/toy", "--dry-run"], monkeypatch) == 0
    out = capsys.readouterr().out
    assert f"would upload 5 files from {built} to dataset me/toy:" in out
    for f in ("README.md", "eval.yaml", "build_report.json", "alpha/test-00000-of-00001.parquet",
              "beta/test-00000-of-00001.parquet"):
        assert f"  {f}\n" in out
    assert ".cache" not in out


def test_push_uploads_the_folder(built, monkeypatch, capsys):
    from huggingface_hub import HfApi

    calls = []

    def create_repo(self, repo_id, **kwargs):
        calls.append(("create_repo", repo_id, kwargs))
        return f"https://huggingface.co/datasets/{repo_id}"

    def upload_folder(self, **kwargs):
        calls.append(("upload_folder", kwargs.pop("repo_id"), kwargs))
        assert "token" not in kwargs and self.token is None  # huggingface_hub resolves HF_TOKEN / login itself
        return type("Commit", (), {"commit_url": "https://huggingface.co/datasets/me/toy/commit/abc"})()

    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    assert _run_push([str(built), "--repo", "me/toy", "--private"], monkeypatch) == 0
    (name1, repo1, kw1), (name2, repo2, kw2) = calls
    assert (name1, repo1) == ("create_repo", "me/toy")
    assert kw1["repo_type"] == "dataset" and kw1["private"] is True and kw1["exist_ok"] is True
    assert (name2, repo2) == ("upload_folder", "me/toy")
    assert kw2["repo_type"] == "dataset" and Path(kw2["folder_path"]) == built
    assert ".*" in kw2["ignore_patterns"]
    captured = capsys.readouterr()
    assert "uploaded 5 files" in captured.out and "commit/abc" in captured.out
    assert SECRET not in captured.out + captured.err


def test_push_refuses_a_folder_that_is_not_a_build(tmp_path, monkeypatch, capsys):
    assert _run_push([str(tmp_path), "--repo", "me/toy", "--dry-run"], monkeypatch) == 2
    assert "has no README.md: build it with datasets_scripts/build.py first" in capsys.readouterr().err
    assert _run_push([str(tmp_path / "nope"), "--repo", "me/toy"], monkeypatch) == 2
    assert "dataset folder not found" in capsys.readouterr().err


def test_push_failure_does_not_leak_the_token(built, monkeypatch, capsys):
    import httpx2
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    def denied(self, repo_id, **kwargs):
        request = httpx2.Request("POST", "https://huggingface.co/api/repos/create")
        raise HfHubHTTPError("401 Client Error: Unauthorized", response=httpx2.Response(401, request=request))

    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setattr(HfApi, "create_repo", denied)
    assert _run_push([str(built), "--repo", "me/toy"], monkeypatch) == 2
    captured = capsys.readouterr()
    assert "error: 401 Client Error" in captured.err and SECRET not in captured.out + captured.err


def test_metric_card_skeleton_renders_a_valid_card():
    from huggingface_hub import RepoCard

    text = build.render_template(
        "metric_card.md.j2", title="Toy Metric", description="Scores toy images: a 'quoted' word.", metric="toy_metric",
        benchmark=Toy(), how_to_use=">>> 1 + 1\n2", inputs=[{"name": "images", "type": "list", "doc": "the images"}],
        outputs=[{"name": "score", "range": "0 to 100", "doc": "mean score"}],
        differences=["the paper averages per image; the official code per question (option per_question=True)"],
        limitations="Judged by a model.", citation=Toy.citation, references=["seed 000"])
    card = RepoCard(text)
    assert card.data.title == "Toy Metric" and card.data.sdk == "gradio" and card.data.app_file == "app.py"
    assert card.data.description == "Scores toy images: a 'quoted' word."
    headings = [line for line in card.text.splitlines() if line.startswith("## ")]
    assert headings == ["## Metric Description", "## How to Use", "## Output Values", "## Limitations and Bias",
                        "## Citation", "## Further References"]
    assert "per_question=True" in card.text and "weighted mean" in card.text
    with pytest.raises(Exception, match="'limitations' is undefined"):
        build.render_template("metric_card.md.j2", title="x", description="x", metric="x", benchmark=None,
                              how_to_use="", inputs=[], outputs=[], differences=[], citation="", references=[])


@pytest.mark.parametrize("benchmark", ["t2i-reasonbench", "r2i-bench", "prism-bench"])
def test_a_missing_license_is_refused_before_the_release_is_opened(benchmark, tmp_path, monkeypatch, capsys):
    """The three real releases have no license the project knows: the build refuses at once, before the release
    is found, unpacked or read (it took 48-94 s of reading before)."""
    from t2ireason import releases

    bench = get_benchmark(benchmark)
    assert bench.license is None

    def never(*args, **kwargs):
        raise AssertionError("the release was opened before the missing license was refused")

    monkeypatch.setattr(releases, "open_source", never)
    monkeypatch.setattr(type(bench), "read_release", never)
    source = Path("../shared/releases") / benchmark
    with pytest.raises(build.BuildError, match="pass --license"):
        build.build_dataset(benchmark, source, tmp_path / "out")
    with pytest.raises(build.BuildError, match="pass --license"):  # nor fetched, with no source
        build.build_dataset(benchmark, None, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    code = commands.main(commands.add_build_args, commands.run_build,
                         [benchmark, "--source", str(source), "--out", str(tmp_path / "out")])
    assert code == 2 and "pass --license" in capsys.readouterr().err


def test_run_refuses_a_missing_license_before_anything(tmp_path, monkeypatch, capsys):
    from t2ireason import cli
    from t2ireason.commands import evaluate

    def never(*args, **kwargs):
        raise AssertionError("the judge was checked before the missing license was refused")

    monkeypatch.setattr(evaluate, "_check_scoring", never)
    code = cli.main(["run", "--benchmark", "r2i-bench", "--source", "../shared/releases/r2i-bench",
                     "--out", str(tmp_path / "run"), "--model", str(tmp_path / "no-model"), "--judge", "scripted:x"])
    assert code == 2 and "pass --license" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
