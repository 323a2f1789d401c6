"""A substitute judge certified against the reference (issue 49): two scripted judges with a known offset."""

import hashlib
import json

import pytest
from PIL import Image

from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.runs import Run
from t2ireason.study.certificate import certificate_line, certify, write_certificate


def judge(bias: int, offset: int = 0, noise: bool = False, model: str = "reference"):
    """PRISM-Bench replies: each question's score from its text (1 to 8) plus the run's ``bias``; the substitute
    gives ``offset`` more, and with ``noise`` a draw of -1, 0 or 1 from the question."""
    def reply(request):
        digest = hashlib.sha256(json.dumps([m.text for m in request.messages]).encode()).digest()
        score = 1 + digest[0] % 6 + bias + offset + ((digest[1] % 3) - 1 if noise else 0)
        return json.dumps({"justification": "scripted", "score": max(0, min(10, score))})
    return ScriptedJudge(reply, model=model)


def runs_judged_twice(folder, offset):
    runs = []
    for bias, name in ((3, "strong"), (1, "middle"), (0, "weak")):
        run = Run.create(folder / name, "prism-bench", name=name)
        for i, row in enumerate(run.rows()):
            path = run.images_dir / run.bench.image_path(row)
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (16, 16), (30 * i % 256, 80, 120)).save(path)
        for name_, j in (("reference", judge(bias)), ("substitute", judge(bias, offset, True, "substitute"))):
            run.evaluate(j, options={"structured_output": True}, name=name_, cache=False, progress=False)
        runs.append(run)
    return runs


def test_a_known_offset_is_recovered_within_its_interval(tmp_path):
    runs = runs_judged_twice(tmp_path, offset=-1)  # one point of the judge's 0-10: -10 on 0-100
    cert = certify(runs, "reference", "substitute", n_resamples=500)
    overall = cert["offsets"]["Overall Avg."]
    assert overall["ci"][0] <= -10 <= overall["ci"][1] and overall["offset"] == pytest.approx(-10, abs=2.5)
    assert cert["ranks"]["same_order"] and cert["ranks"]["kendall_tau"] == pytest.approx(1.0)
    assert 0.5 < cert["items"]["kendall_tau"] <= 1 and cert["items"]["mean_abs_difference"] > 0
    line = certificate_line(cert)
    assert line.startswith("judged by scripted:substitute; against scripted:reference on ")
    assert "ranks of 3 runs the same" in line and "offset in Overall Avg. -" in line
    written = write_certificate(cert, tmp_path / "cert")
    assert all(p.is_file() for p in written) and "Overall Avg." in written[1].read_text()


def test_no_offset_has_an_interval_holding_zero(tmp_path):
    cert = certify(runs_judged_twice(tmp_path, offset=0), "reference", "substitute", n_resamples=500)
    overall = cert["offsets"]["Overall Avg."]
    assert overall["ci"][0] <= 0 <= overall["ci"][1]


def test_the_agreement_command_certifies_a_substitute_and_the_report_cites_it(tmp_path, capsys):
    from t2ireason.cli import main
    from t2ireason.report.writer import write_report

    runs = runs_judged_twice(tmp_path, offset=-1)
    assert main(["agreement", *(str(r.path) for r in runs), "--reference", "reference",
                 "--substitute", "substitute"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("judged by scripted:substitute; against scripted:reference on ")
    assert all((r.path / "certificates" / "substitute-vs-reference" / "certificate.json").is_file() for r in runs)
    report = write_report(runs[:1], tmp_path / "report", evaluation="substitute", n_resamples=200)
    assert line in report["tables_md"].read_text()
    assert main(["agreement", str(runs[0].path), "--reference", "reference"]) != 0
    assert "needs both --reference and --substitute" in capsys.readouterr().err


def test_a_sample_stratified_by_category(tmp_path):
    from t2ireason.stats_paired import stratified_sample

    strata = ["a"] * 50 + ["b"] * 30 + ["c"] * 20
    picked = stratified_sample(strata, 10, seed=1)
    assert [strata[i] for i in picked].count("a") == 5 and [strata[i] for i in picked].count("c") == 2
    assert picked != stratified_sample(strata, 10, seed=2) and picked == stratified_sample(strata, 10, seed=1)
    even = ["a"] * 2 + ["b"] * 2 + ["c"] * 2  # 4 of 6: one each, the fourth to one of the equal remainders
    assert sorted(even[i] for i in stratified_sample(even, 4)) in (
        ["a", "a", "b", "c"], ["a", "b", "b", "c"], ["a", "b", "c", "c"])
    with pytest.raises(ValueError, match="between 1 and 6"):
        stratified_sample(["a"] * 6, 7)
    # evaluate --sample: the images of N prompts, each track its share
    run = runs_judged_twice(tmp_path, offset=0)[0]
    scores = run.evaluate(judge(0), options={"structured_output": True}, name="sampled", cache=False, progress=False,
                          sample=7, seed=3)
    results = run.results("sampled")
    tracks = {r.context["track"] for r in results}
    assert len({r.id for r in results}) == 7 and len(tracks) == 7  # the sample's 7 tracks, one prompt each
    assert run.reload()["evaluations"]["sampled"]["settings"]["sample"] == 7 and scores["num_images"] == len(results)
