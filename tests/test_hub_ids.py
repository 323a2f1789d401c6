"""What reaches Hub metadata is checked by its form before anything is written (issue 34 item 3): as found,
``--license "<the release's license>"`` or ``"not a license!!"`` went into the dataset card,
``<org>/...@<commit>`` into ``.eval_results``, every command exited 0 and ``push --dry-run`` flagged
neither."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from t2ireason import cli
from t2ireason.benchmarks.r2i_bench import BENCHMARK as R2I
from t2ireason.build import build_dataset
from t2ireason.exports import export_results
from t2ireason.hub_ids import check_license, check_repo_id, check_revision, hub_licenses
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.publish import publish
from t2ireason.runs import Run

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _reply(request):
    props = request.json_schema["properties"]
    return json.dumps({"answers": [1] * props["answers"]["minItems"]} if "answers" in props
                      else {k: 1 for k in props})


@pytest.fixture
def scored_run(tmp_path):
    run = Run.create(tmp_path / "sd", "r2i-bench", limit=2)
    for row in run.rows():
        path = run.images_dir / run.bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (10, 80, 200)).save(path)
    run.evaluate(ScriptedJudge(_reply), options={"structured_output": True}, name="j", cache=False, progress=False)
    return run


def test_the_hubs_license_ids_are_shipped_and_checked():
    ids = hub_licenses()
    assert {"apache-2.0", "mit", "cc-by-4.0", "cc-by-nc-sa-4.0", "openrail++", "llama3.1", "other"} <= set(ids)
    assert len(ids) == len(set(ids)) > 80
    assert check_license("cc-by-4.0") == "cc-by-4.0"
    assert check_license("Apache-2.0") == "apache-2.0"  # SPDX spells it so; the Hub's id is lower case
    for placeholder in ("<the release's license>", "not a license!!", "<license>", "", "CC BY 4.0"):
        with pytest.raises(ValueError, match="is not a license id the Hub knows"):
            check_license(placeholder)
    with pytest.raises(ValueError, match="did you mean cc-by-4.0"):
        check_license("cc-by-4")


def test_repository_ids_and_revisions_by_their_form():
    assert check_repo_id("me/results") == "me/results" and check_repo_id("results") == "results"
    for bad in ("<org>/results", "<namespace>/<name>", "a/b/c", "me/re sults", "me/x--y"):
        with pytest.raises(ValueError, match="is not a Hub repository id"):
            check_repo_id(bad)
    assert check_revision(COMMIT) == COMMIT
    for ok in ("main", "v1.0", "refs/pr/3", "release-2025_01"):
        assert check_revision(ok) == ok
    for bad in ("<commit>", "", "a..b", "has space", "x~1", "end.", "a.lock", "@", "feature/", ".hidden", "a@{1}"):
        with pytest.raises(ValueError, match="neither a commit .* nor a branch or tag name"):
            check_revision(bad)
    with pytest.raises(ValueError, match="is not a commit"):
        check_revision("main", commit=True)


def test_export_refuses_placeholders_before_writing_anything(scored_run, tmp_path, capsys):
    out = tmp_path / "export"
    for license in ("<the release's license>", "not a license!!"):
        code = cli.main(["export", str(scored_run.path), "--out", str(out), "--license", license])
        assert code == 2 and "is not a license id the Hub knows" in capsys.readouterr().err
        assert not out.exists()
    code = cli.main(["export", str(scored_run.path), "--out", str(out), "--license", "cc-by-4.0",
                     "--benchmark-dataset", "r2i-bench=<org>/r2i-bench@<commit>"])
    assert code == 2 and "'<org>/r2i-bench' is not a Hub repository id" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(ValueError, match="revision '<commit>' is not a commit"):
        export_results([scored_run], out, license="cc-by-4.0", benchmark_datasets={"r2i-bench": "org/r2i@<commit>"})
    with pytest.raises(ValueError, match="--repo '<org>/results' is not a Hub repository id"):
        export_results([scored_run], out, license="cc-by-4.0", repo_id="<org>/results")
    assert not out.exists()
    # the SPDX spelling is written as the Hub's id
    folder = export_results([scored_run], out, license="CC-BY-4.0",
                            benchmark_datasets={"r2i-bench": f"org/r2i-bench@{COMMIT}"})
    assert "license: cc-by-4.0" in (folder / "README.md").read_text()


def test_push_dry_run_flags_a_placeholder_license_and_eval_results(scored_run, tmp_path, capsys):
    folder = export_results([scored_run], tmp_path / "export", license="cc-by-4.0",
                            benchmark_datasets={"r2i-bench": f"org/r2i-bench@{COMMIT}"})
    assert cli.main(["push", str(folder), "--repo", "me/results", "--dry-run"]) == 0
    capsys.readouterr()
    assert cli.main(["push", str(folder), "--repo", "<org>/results", "--dry-run"]) == 2
    assert "'<org>/results' is not a Hub repository id" in capsys.readouterr().err
    assert cli.main(["push", str(folder), "--repo", "me/results", "--revision", "<branch>", "--dry-run"]) == 2
    assert "--revision '<branch>' is neither a commit" in capsys.readouterr().err

    # a folder written before these checks (or edited by hand) holds the placeholders: push says which
    [entries] = list(folder.glob("eval_results/*/.eval_results/*.yaml"))
    text = entries.read_text()
    entries.write_text(text.replace("org/r2i-bench", "<org>/r2i-bench").replace(COMMIT, "<commit>"))
    assert cli.main(["push", str(folder), "--repo", "me/results", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert ".eval_results/r2i-bench.yaml: dataset id '<org>/r2i-bench' is not a Hub repository id" in err
    entries.write_text(text.replace(COMMIT, "<commit>"))
    assert cli.main(["push", str(folder), "--repo", "me/results", "--dry-run"]) == 2
    assert "dataset revision '<commit>' is not a commit" in capsys.readouterr().err
    entries.write_text(text)
    card = folder / "README.md"
    card.write_text(card.read_text().replace("license: cc-by-4.0", "license: <the release's license>"))
    with pytest.raises(ValueError, match="the card's license \"<the release's license>\" is not a license id"):
        publish(folder, "me/results", dry_run=True)


def test_build_and_run_refuse_a_placeholder_license_before_anything(tmp_path, capsys):
    out = tmp_path / "built"
    with pytest.raises(ValueError, match="--license \"<the release's license>\" is not a license id"):
        build_dataset("r2i-bench", R2I.sample_path(), out, license="<the release's license>")
    with pytest.raises(ValueError, match="--repo '<org>/r2i-bench' is not a Hub repository id"):
        build_dataset("r2i-bench", R2I.sample_path(), out, license="mit", repo_id="<org>/r2i-bench")
    assert not out.exists()
    run = tmp_path / "run"
    code = cli.main(["run", "--benchmark", "r2i-bench", "--source", str(R2I.sample_path()), "--license",
                     "not a license!!", "--out", str(run), "--model", str(tmp_path / "no-model"), "--judge", "scripted:x"])
    assert code == 2 and "--license 'not a license!!' is not a license id" in capsys.readouterr().err
    code = cli.main(["evaluate", "--run", str(run), "--benchmark", "r2i-bench", "--data", "org/r2i",
                     "--data-revision", "<commit>", "--judge", "scripted:x"])
    assert code == 2 and "--data-revision '<commit>' is neither a commit" in capsys.readouterr().err
    assert not run.exists()
