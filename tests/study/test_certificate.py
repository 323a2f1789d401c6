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
