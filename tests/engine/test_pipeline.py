"""The data engine end to end on CPU: tiny diffusion model, scripted judge replies, a dataset out.

What each record should become is written down in scripted.py; these tests check that it did, that an
interrupted run resumes to the same dataset without asking or drawing again what was done, that a judge
backend failure leaves its task for the next run, and that a run refuses settings its finished stages did
not use. The reference run (conftest.py) is one datatrove task on one worker; test_datatrove.py runs the
same work split over tasks, worker processes, kills and a Slurm cluster.
"""

import json
import shutil
import sys
from pathlib import Path

import datasets
import pytest
from huggingface_hub import DatasetCard

from t2ireason.benchmarks import flux_reason as fr
from t2ireason.engine import EngineConfig, EngineError, Sources, Workdir, run_engine
from t2ireason.judges import Reply
from t2ireason.judges.scripted import ScriptedJudge

from .conftest import CONFIG, read_release, run_scripted, same_release, tiny_drawer
from .scripted import DROPPED, KEPT, input_paths, labels, make_inputs, reply, rid

pytestmark = pytest.mark.slow  # tiny models

ROOT = Path(__file__).resolve().parents[2]


def test_end_to_end_dataset(reference):
    result, rows, out = reference.result, reference.rows, reference.root / "out"
    assert result.complete and result.candidates == {"laion": 10, "imagination": 8, "text_rendering": 6}
    expected = {rid(s, i) for s, kept in KEPT.items() for i in kept}
    assert set(rows) == expected
    assert datasets.load_dataset(str(out), split="train").features == fr.FEATURES
    for record_id, row in rows.items():
        source, i = record_id.rsplit("-", 1)[0], int(record_id.rsplit("-", 1)[1])
        assert row["characteristics"] == labels(source, i), record_id
        assert {c for c, t in row["captions"].items() if t} == set(labels(source, i)), record_id
        assert {c for c, t in row["captions_zh"].items() if t} == set(labels(source, i)), record_id
        assert row["image"].shape == (32, 32, 3)
        assert (row["gcot"] is None) == (record_id == "imagination-00000004"), record_id
        assert (row["gcot_zh"] is None) == (row["gcot"] is None)
        keeps_original = source == "laion" and i % 2 == 0
        assert row["original_caption"] == (f"laion caption {i}" if keeps_original else None), record_id
        assert row["original_caption_zh"] == (f"译文：laion caption {i}" if keeps_original else None), record_id
    assert rows["laion-00000007"]["characteristic_scores"]["style"] == 7.5  # under the style threshold of 8
    text = rows["text-00000003"]
    assert text["source"] == "text_rendering"
    assert text["captions"]["text_rendering"] == 'A shop sign reads "SHOP 3" in bold red letters.'
    # re-asked: the first translation lost the string to render, which stays English
    assert text["captions_zh"]["text_rendering"] == '译文：A shop sign reads "SHOP 3" in bold red letters.'
    assert '"SHOP 0"' in rows["text-00000000"]["gcot"]  # revised after the first plan left it out
    assert rows["imagination-00000001"]["captions"]["affection"] == "affection caption of imagination-00000001."
    # the published-shape reader reads the release as it reads FLUX-Reason-6M
    release = fr.BENCHMARK.read_release(out)
    assert release.anomalies == [] and len(release.configs["default"]) == len(expected)
    assert release.counts["default"]["gcot"] == len(expected) - 1


def test_provenance_says_who_dropped_or_labelled_and_why(reference):
    prov = reference.provenance
    assert len(prov) == 24
    assert {i: r["dropped_by"] for i, r in prov.items() if not r["kept"]} == DROPPED
    assert all(r["kept"] == (r["dropped_by"] is None) for r in prov.values())

    def events(record_id, stage=None):
        return [(e["stage"], e["action"], e["detail"]) for e in prov[record_id]["events"]
                if stage is None or e["stage"] == stage]

    failed = events("imagination-00000002")
    assert [(s, a) for s, a, _ in failed] == [("quality", "failed")]
    assert json.loads(failed[0][2])["replies"] == ["I cannot tell."] * 3  # the first ask and two re-asks, kept
    assert events("laion-00000003") == [("quality", "dropped", '{"flaws": ["blur"], "reason": "too blurry"}')]
    assert events("text-00000004") == [("prompts", "dropped", "the image holds no clear, legible text")]
    assert events("text-00000001", "scoring")[-1] == ("scoring", "dropped", "typographic filter: garbled letters")
    assert events("laion-00000005", "scoring")[0][2].startswith("no characteristic reaches its threshold")
    labelled = events("laion-00000000", "scoring")[0]
    assert labelled[:2] == ("scoring", "labelled") and labelled[2].startswith("entity (8 >= 7), style (9 >= 8)")
    assert [a for _, a, _ in events("text-00000000", "gcot")] == ["revised", "passed"]
    assert json.loads(events("text-00000000", "gcot")[0][2]) == {
        "attempt": 1, "issues": ['the text "SHOP 0" is not quoted exactly as written']}
    rejected = events("imagination-00000004", "gcot")
    assert [a for _, a, _ in rejected] == ["revised", "rejected"] and "moon left of the tower" in rejected[-1][2]
    assert events("laion-00000001", "original") == [("original", "rejected", "alignment 4 < 7")]
    assert prov["laion-00000000"]["prompt"] == "A detailed photograph: laion caption 0, rewritten."
    assert prov["text-00000000"]["prompt"] == 'A storefront sign reading "SHOP 0".'


def test_requests_carry_what_each_stage_needs(reference):
    requests = reference.asked
    by = {}
    for r in requests:
        by.setdefault((r.metadata["stage"], r.metadata["id"]), []).append(r)
    seeds = {f"seed prompt {i}: a clock melting into a river" for i in range(12)}
    (imagination,) = by[("prompts", "imagination-00000000")]
    shown = {line.split(". ", 1)[1] for line in imagination.messages[0].text.splitlines() if line[:1].isdigit()}
    assert len(shown) == 10 and shown <= seeds
    assert imagination.sampling.temperature == 1.0 and imagination.sampling.seed is not None
    assert not imagination.images
    (laion,) = by[("prompts", "laion-00000000")]
    assert len(laion.images) == 1 and '"laion caption 0"' in laion.messages[0].text
    (gcot,) = by[("gcot", "laion-00000000")]
    assert "- Entity: entity caption of laion-00000000." in gcot.messages[0].text
    assert "- Style: style caption of laion-00000000." in gcot.messages[0].text and len(gcot.images) == 1
    keep = [r for r in by[("translate", "text-00000003")] if r.metadata["key"] == "text_rendering"]
    assert len(keep) == 2  # asked, then re-asked in the same conversation
    assert 'keep each of them in English, exactly as written, inside quotation marks: "SHOP 3"' in keep[0].messages[0].text
    assert "stay in English exactly as written" in keep[1].messages[-1].text
    # the review sample of the quality filter: 3 accepted, the 1 rejected, images alongside
    review = reference.root / "work" / "review" / "quality" / "review.csv"
    lines = review.read_text().splitlines()
    assert len(lines) == 1 + 4 and sum(",reject," in line for line in lines) == 1
    assert all((review.parent / line.split(",")[0]).is_file() for line in lines[1:])


def test_statistics_and_card(reference):
    out = reference.root / "out"
    stats = json.loads((out / "statistics.json").read_text())
    assert stats["candidates"] == 24 and stats["kept"] == 18
    assert stats["dropped_by"] == {"prompts": 2, "quality": 2, "scoring": 2}
    assert {c: s["images"] for c, s in stats["labels"].items()} == {
        "imagination": 7, "entity": 8, "text_rendering": 3, "style": 5, "affection": 7, "composition": 3}
    assert stats["labels"]["entity"]["ratio"] == round(8 / 18, 4)
    assert stats["sources"]["text_rendering"] == {"candidates": 6, "kept": 3, "share": round(3 / 18, 4)}
    counts = {k: v["count"] for k, v in stats["captions"].items()}
    assert counts == {"imagination": 7, "entity": 8, "text_rendering": 3, "style": 5, "affection": 7,
                      "composition": 3, "gcot": 17, "original_caption": 5}
    assert stats["captions_total"] == 55 and stats["captions_total_bilingual"] == 110
    words = stats["captions"]["text_rendering"]["words"]  # 'A shop sign reads "SHOP 3" in bold red letters.'
    assert words["mean"] == 10 and words["median"] == 10 and words["histogram"] == {"10-19": 3}
    card = DatasetCard.load(out / "README.md")
    assert card.data.license == "apache-2.0" and card.data.task_categories == ["text-to-image"]
    assert [c["config_name"] for c in card.data.configs] == ["default", "provenance"]
    assert "| Entity | 8 | 44.4% |" in card.text and "| scoring: thresholds |" in card.text


def interrupting_drawer(sd, stop_at: int):
    """Draws like the tiny model, then stops the run (as a kill would) on its ``stop_at``-th call. A
    closure, so the counts survive the copy of the pipeline datatrove makes for each task."""
    from t2ireason.generation import Drawer

    inner, state = Drawer(tiny_drawer(sd), device="cpu"), {"calls": 0, "drawn": 0}

    def draw(prompts, seeds):
        state["calls"] += 1
        if state["calls"] == stop_at:
            raise KeyboardInterrupt
        state["drawn"] += len(prompts)
        return inner(prompts, seeds)

    draw.config, draw.state = inner.config, state
    return draw


def test_interrupted_runs_resume_to_the_same_dataset(reference, tiny_models, tmp_path):
    make_inputs(tmp_path / "inputs")
    work = Workdir(tmp_path / "work")
    drawer = interrupting_drawer(tiny_models["sd"], stop_at=4)
    with pytest.raises(KeyboardInterrupt):
        run_scripted(tmp_path, drawer)
    # shard 0 (5 images, in calls of 4 and 1) is committed; shard 1 has 4 of its 5 images on disk, uncommitted
    assert work.shards("synthesis") == ["shard-00000"] and drawer.state["drawn"] == 9
    assert not list(work.stage_dir("synthesis").glob(".tmp-*"))
    assert sorted(p.name for p in (work.logs("synthesis") / "completions").iterdir()) == ["00000"]

    asked = {"n": 0}

    def stop_in_captions(request):
        if request.metadata["stage"] == "captions" and request.metadata["id"].startswith("imagination"):
            asked["n"] += 1
            if asked["n"] == 3:  # two captions of shard 2 answered (and cached), then a kill
                raise KeyboardInterrupt
        return reply(request)

    drawer = interrupting_drawer(tiny_models["sd"], stop_at=-1)  # no interruption this time
    with pytest.raises(KeyboardInterrupt):
        run_scripted(tmp_path, drawer, replies=stop_in_captions, batch_size=1)
    assert drawer.state["drawn"] == 22 - 5 - 4  # 22 prompts; finished images are not drawn again
    assert work.shards("captions") == ["shard-00000", "shard-00001"]

    result, asked = run_scripted(tmp_path, tiny_drawer(tiny_models["sd"]))
    assert result.complete
    stages = {(r.metadata["stage"], r.metadata["id"].split("-")[0]) for r in asked}
    assert not {s for s, _ in stages} & {"prompts", "quality", "scoring", "typography"}, "committed: not asked again"
    captions = [r for r in asked if r.metadata["stage"] == "captions"]
    assert not any(r.metadata["id"].startswith("laion") for r in captions)  # shards 0 and 1 were committed
    assert sum(r.metadata["id"].startswith("imagination-0000000") and int(r.metadata["id"][-1]) < 5
               for r in captions) == 2 * 4 - 2  # shard 2: 4 kept records x 2 labels, 2 answered from the cache
    summary = {s.stage: s for s in result.stages}
    assert summary["captions"].stats["cached replies"] == 2 and summary["prompts"].stats["records in"] == 24
    same_release(tmp_path / "out", reference)


def test_backend_errors_leave_the_task_for_the_next_run(reference, tiny_models, tmp_path):
    make_inputs(tmp_path / "inputs")
    failing = {"imagination-00000006"}

    def flaky(request):
        if request.metadata["stage"] == "quality" and request.metadata["id"] in failing:
            return Reply(text="", model="scripted", sampling={}, error="HTTP 503 from the judge", transient=True)
        return reply(request)

    result, _ = run_scripted(tmp_path, tiny_drawer(tiny_models["sd"]), replies=flaky)
    assert not result.complete and result.statistics is None and not (tmp_path / "out").exists()
    # the other four tasks of the stage completed; the stages after it did not start
    assert result.pending == {"prompts": 0, "synthesis": 0, "quality": 1, "scoring": 5, "captions": 5, "gcot": 5,
                              "original": 5, "translate": 5, "export": 5, "release": 1}
    (why,) = {s.stage: s for s in result.stages}["quality"].failures.values()
    assert "ShardsLeft" in why and "HTTP 503" in why and "shard-00003" in why
    assert Workdir(tmp_path / "work").shards("quality") == ["shard-00000", "shard-00001", "shard-00002",
                                                            "shard-00004"]
    result, asked = run_scripted(tmp_path, tiny_drawer(tiny_models["sd"]))
    assert result.complete and len(read_release(tmp_path / "out")) == 18
    # only the failed question is asked again: the shard's other answers come from the response cache
    assert [r.metadata["id"] for r in asked if r.metadata["stage"] == "quality"] == ["imagination-00000006"]
    same_release(tmp_path / "out", reference)

    # or, asked to, the failure is recorded on the record and the run goes on
    other = tmp_path / "record"
    make_inputs(other / "inputs")
    result, _ = run_scripted(other, tiny_drawer(tiny_models["sd"]), replies=flaky, on_judge_error="record")
    assert result.complete
    prov = read_release(other / "out", "provenance")["imagination-00000006"]
    assert prov["dropped_by"] == "quality" and "HTTP 503" in prov["events"][0]["detail"]
    assert {s.stage: s for s in result.stages}["quality"].stats["backend errors"] == 1


def test_settings_and_inputs_of_a_finished_stage_cannot_change(reference, tiny_models):
    root = reference.root
    judge = ScriptedJudge(replies=reply)
    with pytest.raises(EngineError, match=r"stage 'scoring' .*thresholds.*delete 04-scoring, 05-captions"):
        run_engine(root / "work", Sources(**input_paths(root / "inputs")),
                   EngineConfig(**(CONFIG | {"thresholds": {"style": 6}})), judge=judge,
                   drawer=tiny_drawer(tiny_models["sd"]), progress=False)
    with pytest.raises(EngineError, match=r"stage 'synthesis' .*drawer"):  # another diffusion model
        run_engine(root / "work", Sources(**input_paths(root / "inputs")), EngineConfig(**CONFIG), judge=judge,
                   drawer=tiny_drawer(tiny_models["sd"]).__class__(model="other/model"), progress=False)
    with pytest.raises(EngineError, match="was started from other inputs"):
        run_engine(root / "work", Sources(**(input_paths(root / "inputs") | {"imagination": 9})),
                   EngineConfig(**CONFIG), judge=judge, progress=False)
    with pytest.raises(EngineError, match="needs a license"):
        run_engine(root / "work", Sources(), out=root / "elsewhere", progress=False)


def test_command_line_resumes_a_finished_work_folder(reference, tiny_models, monkeypatch, capsys, tmp_path):
    """``flux_engine.py run`` over the reference's work folder, with one task per shard where the reference
    had one task in all: every shard is committed, so no model is loaded, nothing is asked or drawn
    again, and the release written elsewhere is the same."""
    import t2ireason.judges

    sys.path.insert(0, str(ROOT / "generators"))
    try:
        import flux_engine
    finally:
        sys.path.pop(0)
    loaded = []
    monkeypatch.setattr(t2ireason.judges, "load_judge", lambda *a, **k: loaded.append(a))
    root = reference.root
    argv = ["run", "--work", str(root / "work"), "--out", str(tmp_path / "release"), "--license", "apache-2.0",
            *sum(([f"--{k.replace('_', '-')}", str(v)] for k, v in input_paths(root / "inputs").items()), []),
            "--judge", "hf:some/vlm", "--judge-kwargs", '{"dtype": "bfloat16"}', "--cache", str(root / "cache.sqlite"),
            "--model", str(tiny_models["sd"]), "--steps", "1", "--height", "32", "--width", "32", "--batch-size", "4",
            "--shard-size", "5", "--thresholds", "style=8", "--review-size", "3", "--no-progress"]
    # the reference ran its judge as an object; by spec it is another judge: that is refused...
    assert flux_engine.main(argv) == 2
    assert "error: stage 'prompts'" in capsys.readouterr().err
    # ...unless the stages that used it are redone; here, only the settings say which judge it was
    work = Workdir(root / "work")
    for stage in ("prompts", "quality", "scoring", "captions", "gcot", "original", "translate"):
        settings = work.settings(stage)
        settings.pop("quality_filter", None)  # as a folder made before that setting existed: taken at its default
        work.save_settings(stage, {**settings, **{k: {"spec": "hf:some/vlm", "options": {"dtype": "bfloat16"}}
                                                  for k in ("judge", "llm") if k in settings}})
    assert flux_engine.main(argv) == 0
    printed = capsys.readouterr().out
    assert "candidates: laion 10, imagination 8, text_rendering 6" in printed
    assert "  scoring    5/5 tasks  20 in, 18 kept, 2 dropped (labelled 19, passed 3, dropped 2)" in printed
    assert f"18 of 24 candidates kept, 55 captions -> {tmp_path / 'release'}" in printed
    assert not loaded
    assert read_release(tmp_path / "release", "provenance") == reference.provenance

    assert flux_engine.main([*argv[:-7], "--shard-size", "5", "--thresholds", "style=6", "--no-progress"]) == 2
    assert "error: stage 'scoring'" in capsys.readouterr().err
    assert flux_engine.main([*argv, "--quality-filter", "record"]) == 2  # not the default it was taken at
    assert "error: stage 'quality'" in capsys.readouterr().err
    assert flux_engine.main([*argv, "--images-per-prompt", "2"]) == 2
    assert "error: the engine draws one image per prompt" in capsys.readouterr().err
    assert flux_engine.main(["status", "--work", str(root / "work")]) == 0
    assert "  export     5/5 tasks  18 kept" in capsys.readouterr().out


def test_a_real_judge_model_answers_every_stage_question(tiny_models, tmp_path):
    """The tiny random VLM as the judge (transformers backend, the requests' JSON schemas enforced): its
    answers are meaningless, but every one parses, so the quality verdicts are recorded, not failures."""
    from t2ireason.testing import tiny_judge_kwargs

    (tmp_path / "captions.txt").write_text("a red apple on a table\na dog in the snow\n")
    result = run_engine(tmp_path / "work", Sources(captions=str(tmp_path / "captions.txt")), EngineConfig(),
                        judge=f"hf:{tiny_models['vlm']}", judge_kwargs=tiny_judge_kwargs(tiny_models["vlm"]),
                        drawer=tiny_drawer(tiny_models["sd"]), until="quality", progress=False)
    assert result.complete and result.candidates == {"laion": 2}
    records = list(Workdir(tmp_path / "work").records("quality"))
    assert all(r["prompt"] and r["image"] for r in records)
    assert [[(e["stage"], e["action"]) for e in r["events"]] for r in records] == \
        [[("quality", "passed" if r["dropped_by"] is None else "dropped")] for r in records]


@pytest.mark.filterwarnings("ignore:Number of distinct clusters")  # the tiny CLIP reads 16 tokens: some captions tie
def test_sample_command_on_the_release(reference, tiny_models, tmp_path, capsys):
    """PRISM-Bench representative prompts from the engine's own release, streamed through the
    flux-reason-6m reader, embedded by the tiny CLIP's text tower."""
    from .test_parts import _cli

    assert _cli("sample", "--data", str(reference.root / "out"), "--embedder", str(tiny_models["clip"]),
                "--tracks", "entity", "imagination", "--k", "3", "--top", "6", "--out", str(tmp_path)) == 0
    assert "entity: 3 prompts" in capsys.readouterr().out
    ids = json.loads((tmp_path / "selected_ids.json").read_text())
    assert len(set(ids["entity"])) == 3 and set(ids["entity"]) <= {i for i in reference.rows if i.startswith("laion")}
    lines = [json.loads(line) for line in (tmp_path / "captions" / "zh" / "imagination.jsonl").read_text().splitlines()]
    assert [line["prompt"] for line in lines] == [reference.rows[i]["captions_zh"]["imagination"]
                                                  for i in ids["imagination"]]


def test_shards_with_nothing_kept(tiny_models, tmp_path):
    """A shard whose records are all dropped has no data file (an empty Parquet file breaks load_dataset)
    but keeps its provenance; a run that keeps nothing at all releases nothing, and says why."""
    make_inputs(tmp_path / "inputs")
    rejected = {"imagination-00000000", "imagination-00000001"}

    def reject(request):
        if request.metadata["stage"] == "quality" and request.metadata["id"] in rejected:
            return json.dumps({"blur": True, "artifacts": False, "structural_errors": False, "verdict": "reject",
                               "reason": "blurred"})
        return reply(request)

    def run(replies, out):
        judge = ScriptedJudge(replies=replies)
        return run_engine(tmp_path / "work", Sources(seed_prompts=str(tmp_path / "inputs" / "seeds.txt"), imagination=4),
                          EngineConfig(**(CONFIG | {"shard_size": 2})), judge=judge,
                          drawer=tiny_drawer(tiny_models["sd"]), out=out, license="apache-2.0", progress=False)

    result = run(reject, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out" / "data").iterdir()) == ["train-00001.parquet"]
    assert sorted(p.name for p in (tmp_path / "out" / "provenance").iterdir()) == ["train-00000.parquet",
                                                                                 "train-00001.parquet"]
    assert set(read_release(tmp_path / "out")) == {"imagination-00000003"}  # imagination-2 fails the quality filter
    assert len(read_release(tmp_path / "out", "provenance")) == 4 and result.statistics["kept"] == 1
    rejected.add("imagination-00000003")
    for stage in ("quality", "scoring", "captions", "gcot", "original", "translate"):  # redo from the filter
        shutil.rmtree(Workdir(tmp_path / "work").stage_dir(stage))
    with pytest.raises(EngineError, match="every candidate was dropped, nothing to release"):
        run(reject, tmp_path / "out2")


def test_a_failing_task_is_one_console_line_and_its_traceback_stays_in_the_task_log(tmp_path, capfd, monkeypatch):
    """A task that fails (here the drawer's model cannot load) used to print about 100 lines of datatrove's
    loguru traceback, with its variable dumps, and what the libraries print while loading a model (progress
    bars, ``logging`` warnings, ``warnings``: about 20 lines) before the run's one-line cause. The console
    gets one error line per task; the task log keeps all of it, each progress bar by its last frame."""
    import logging
    import warnings

    from tqdm import tqdm

    from t2ireason.commands.engine import _print_summary

    from .scripted import ScriptedDrawer

    library = logging.getLogger("a_library_imported_in_the_task")

    class Unloadable(ScriptedDrawer):
        def __call__(self, prompts, seeds):
            for _ in tqdm(range(5), desc="Loading pipeline components..."):
                pass
            if not library.handlers:  # as transformers and diffusers do on their first import: sys.stderr then
                library.addHandler(logging.StreamHandler())
                library.propagate = False
            library.warning("An error occurred while trying to fetch broken/unet")
            # what warnings.warn prints outside pytest (which records warnings instead): on sys.stderr, as it is then
            sys.stderr.write(warnings.formatwarning("Defaulting to unsafe serialization", UserWarning, "x.py", 1))
            raise OSError("Error no file named config.json found in directory broken.")

    import datatrove.utils.logging

    monkeypatch.setattr(datatrove.utils.logging, "DATATROVE_COLORIZE_LOGS", True)  # as on a terminal
    make_inputs(tmp_path / "inputs")
    result, _ = run_scripted(tmp_path, Unloadable())
    err = capfd.readouterr().err
    assert not result.complete and "Traceback" not in err and "│" not in err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == result.stages[1].tasks > 1 and all(  # one per task of the stage, nothing else
        "ERROR" in x and x.endswith("Error no file named config.json found in directory broken.\x1b[0m (traceback "
                                    "in the task log)") for x in lines), lines
    for log in (tmp_path / "work").glob("*-synthesis/logs/logs/task_*.log"):
        text = log.read_text()
        assert "Traceback" in text and "OSError: Error no file named config.json" in text
        assert "stderr: An error occurred while trying to fetch broken/unet" in text  # the handler of task 0 too
        assert "Defaulting to unsafe serialization" in text
        bars = [x for x in text.splitlines() if "Loading pipeline components" in x]
        assert len(bars) == 1 and "5/5" in bars[0] and "\r" not in bars[0] and "\x1b" not in bars[0]
    library.warning("outside a task")  # a handler made in a task writes to the console again once it ends
    assert capfd.readouterr().err == "outside a task\n"
    library.handlers.clear()

    _print_summary(result)  # the stages after the failed one did not start; running again as it is won't help
    out = capfd.readouterr().out
    assert "  quality    0/5 tasks  not started (synthesis did not complete)" in out.splitlines()
    assert result.lasting_failures and all("OSError" in why for why in result.lasting_failures)


def test_only_failures_that_may_not_repeat_are_left_to_running_again():
    from t2ireason.commands.engine import _what_next
    from t2ireason.engine.pipeline import EngineResult, StageSummary

    def failed(why):
        return EngineResult({}, [StageSummary("synthesis", 2, 1, failures={1: why})])

    for transient in ("a worker process of the run was killed before this task finished (BrokenProcessPool)",
                      "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                      "APIConnectionError: Connection error.", "RateLimitError: Error code: 429",
                      "JudgeUnavailable: the judge at http://127.0.0.1:9/v1 is unreachable: connection refused"):
        assert failed(transient).lasting_failures == []
        assert _what_next(failed(transient)).startswith("1 stage(s) have tasks that did not complete: run the same "
                                                        "command again to finish them")
    lasting = failed("ValueError: --steps must be positive")
    assert lasting.lasting_failures == ["synthesis task 1: ValueError: --steps must be positive"]
    assert "for a cause that running again as it is meets again (above): fix it, then" in _what_next(lasting)


def test_the_shipped_sample_inputs_make_a_release(tmp_path, capsys):
    """``t2ireason engine run --sample`` (README's first run) reads the inputs shipped with the package: every
    source, images found beside them; with the scripted judge and drawer the run goes to the release."""
    from t2ireason.cli import build_parser
    from t2ireason.commands.engine import run_engine_command
    from t2ireason.engine.sources import sample_sources

    from .scripted import ScriptedDrawer

    result = run_engine(tmp_path / "work", sample_sources(), EngineConfig(**CONFIG),
                        judge=ScriptedJudge(replies=reply), drawer=ScriptedDrawer(), out=tmp_path / "out",
                        license="apache-2.0", progress=False)
    assert result.complete and result.candidates == {"laion": 4, "imagination": 4, "text_rendering": 2}
    assert Path(next(Workdir(tmp_path / "work").records("sources"))["input_image"]).is_file()
    assert len(read_release(tmp_path / "out", "default")) == result.statistics["kept"] > 0
    args = build_parser("engine").parse_args(["engine", "estimate", "--work", str(tmp_path / "est"), "--sample"])
    assert run_engine_command(args) == 0
    assert "candidates: laion 4, imagination 4, text_rendering 2" in capsys.readouterr().out
    with pytest.raises(ValueError, match="--sample gives the inputs: drop --captions"):
        run_engine_command(build_parser("engine").parse_args(["engine", "estimate", "--work", "w", "--sample",
                                                              "--captions", "c.txt"]))


def test_quality_filter_record_keeps_rejected_images_with_their_verdict(tmp_path):
    """README's first run: the tiny random judge rejects every image, so ``--quality-filter record`` keeps
    them, each with its ``rejected`` verdict (and in the review sample); the default drops them all."""
    from t2ireason.engine.export import export_review_sample
    from t2ireason.engine.sources import sample_sources

    from .scripted import ScriptedDrawer

    def rejecting(request):
        if request.metadata["stage"] == "quality":
            return json.dumps({"blur": True, "artifacts": False, "structural_errors": False, "verdict": "reject",
                               "reason": "random"})
        return reply(request)

    kept = run_engine(tmp_path / "kept", sample_sources(), EngineConfig(**(CONFIG | {"quality_filter": "record"})),
                      judge=ScriptedJudge(replies=rejecting), drawer=ScriptedDrawer(), out=tmp_path / "out",
                      license="apache-2.0", progress=False)
    assert kept.complete and len(read_release(tmp_path / "out", "default")) == kept.statistics["kept"] > 0
    records = list(Workdir(tmp_path / "kept").records("quality"))
    assert len(records) == 10 and all([e["action"] for e in r["events"] if e["stage"] == "quality"] == ["rejected"]
                                     for r in records)
    review = export_review_sample(Workdir(tmp_path / "kept"), tmp_path / "review", per_verdict=3)
    assert review.read_text().count(",reject,") == 3
    run_engine(tmp_path / "dropped", sample_sources(), EngineConfig(**CONFIG), judge=ScriptedJudge(replies=rejecting),
               drawer=ScriptedDrawer(), until="quality", progress=False)
    assert all(r["dropped_by"] == "quality" for r in Workdir(tmp_path / "dropped").records("quality"))
    with pytest.raises(ValueError, match="quality_filter must be 'apply' or 'record'"):
        EngineConfig(quality_filter="off")
