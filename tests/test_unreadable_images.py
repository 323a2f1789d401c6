"""Issue 50: image files cut short after generation are not judge failures (the judge was never asked): counted
apart as unreadable, `evaluate` exits 1 without --allow-failed, and an evaluation finished before the damage does not
keep saying every image was scored. The command's line says the count once, in the coverage's words."""

from __future__ import annotations

from pathlib import Path

from test_cli import run_with_images, scripted_reply  # the tests folder is on the path (no __init__.py)

from t2ireason import cli
from t2ireason.runs import Run
from t2ireason.testing_http import serve


def _answer(request):
    return scripted_reply(request.body["response_format"]["json_schema"]["schema"])


def _cut_short(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _evaluate(run: Run, server, *extra: str) -> int:
    return cli.main(["evaluate", "--run", str(run.path), "--options", '{"structured_output": true}', "--no-cache",
                     "--no-progress", "--name", "e", "--judge", f"openai:tiny@{server.base_url}", *extra])


def test_images_cut_short_are_unreadable_not_judge_failures_and_exit_1(tmp_path, capsys):
    run = run_with_images(tmp_path / "run", limit=4)
    files = sorted(run.images_dir.rglob("*.png"))
    _cut_short(files[0])
    with serve(_answer, models=["tiny"]) as server:
        rc = _evaluate(run, server)
        said = capsys.readouterr()
        asked = len(server.requests)
        assert rc == 1, said.err  # exit 0 before, as if every image had been judged
        assert "error: 1 of 4 image files cannot be read" in said.err and "--allow-failed" in said.err
        scores = Run.open(run.path).scores("e")
        assert scores["coverage"]["unreadable"] == 1 and scores["coverage"]["failed"] == 0
        assert scores["coverage"]["text"] == "3 of 4 images scored (1 unreadable image files)"
        assert scores["num_unreadable"] == 1 and scores["num_retryable"] == 0
        # one count, one wording: the coverage's, once ("4 images scored ... (1 failed" then "coverage: 3 of 4")
        lines = [line for line in said.out.splitlines() if "images scored" in line]
        assert len(lines) == 1 and lines[0].startswith("coverage: 3 of 4 images scored (1 unreadable image files) by "), \
            said.out
        assert _evaluate(run, server, "--allow-failed") == 0 and len(server.requests) == asked  # nothing asked
        capsys.readouterr()


def test_an_evaluation_finished_before_the_damage_does_not_keep_saying_all_were_scored(tmp_path, capsys):
    run = run_with_images(tmp_path / "run", limit=4)
    with serve(_answer, models=["tiny"]) as server:
        assert _evaluate(run, server) == 0
        assert Run.open(run.path).scores("e")["coverage"]["text"] == "4 of 4 images scored"
        asked = len(server.requests)
        _cut_short(sorted(run.images_dir.rglob("*.png"))[1])
        capsys.readouterr()
        assert cli.main(["report", str(run.path)]) == 0  # the report, before the evaluation runs again, says it
        assert "warning: 1 image files of evaluation 'e' of" in capsys.readouterr().out
        assert _evaluate(run, server) == 1  # 4 of 4 and exit 0 before: the finished scores returned as they were
        scores = Run.open(run.path).scores("e")
        assert scores["coverage"]["text"] == "3 of 4 images scored (1 unreadable image files)"
        assert len(server.requests) <= asked + 1  # at most the pre-flight probe: the damaged image is not asked
        # made again: scored again, once it reads
        from PIL import Image

        damaged = sorted(run.images_dir.rglob("*.png"))[1]
        Image.new("RGB", (16, 16), (1, 2, 3)).save(damaged)
        assert _evaluate(run, server) == 0
        assert Run.open(run.path).scores("e")["coverage"]["text"] == "4 of 4 images scored"
    capsys.readouterr()
