"""vqascore and clip_score: one unreadable image is that image's failure, and clip_score loads its
model at first use, saying which model could not be loaded and how to choose another."""

from __future__ import annotations

import io
from pathlib import Path

import evaluate
import numpy as np
import pytest
from PIL import Image

from t2ireason.alignment import DEFAULT_CLIP_MODEL, CLIPLoadError
from t2ireason.judges.scripted import ScriptedJudge

ROOT = Path(__file__).resolve().parents[2]


def metric(name: str, **kwargs):
    return evaluate.load(str(ROOT / "metrics" / name), **kwargs)


@pytest.fixture
def mixed_images(tmp_path):
    """Readable images (a PIL image and a PNG file) among every kind of unreadable one."""
    good = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    buf = io.BytesIO()
    good.save(buf, format="PNG")
    png = buf.getvalue()
    files = {"ok.png": png, "empty.png": b"", "cut.png": png[: len(png) // 2], "no_end.png": png[:-12],
             "text.png": b"this is not an image"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    images = [good, str(tmp_path / "empty.png"), str(tmp_path / "ok.png"), str(tmp_path / "cut.png"),
              str(tmp_path / "no_end.png"), str(tmp_path / "text.png"), str(tmp_path / "missing.png")]
    return images, [True, False, True, False, False, False, False]


def test_vqascore_reports_unreadable_images_per_image(mixed_images):
    images, readable = mixed_images
    judge = ScriptedJudge(probabilities=[0.8, 0.4])
    vqa = metric("vqascore", judge=judge, cache=False)
    out = vqa.compute(predictions=images, references=[f"prompt {i}" for i in range(len(images))])
    assert out["scores"] == [0.8, None, 0.4, None, None, None, None]
    assert out["vqascore"] == pytest.approx(0.6)  # failures are left out, never counted as zero
    assert out["num_images"] == 7 and out["num_failed"] == 5
    assert [e is None for e in out["errors"]] == readable
    assert "empty.png" in out["errors"][1] and "missing.png" in out["errors"][6]
    # only the readable images reached the judge, each with its own prompt
    assert [q.question for q in judge.queries] == [
        'Does this figure show "prompt 0"? Please answer yes or no.',
        'Does this figure show "prompt 2"? Please answer yes or no.']


def test_vqascore_with_no_readable_image_scores_none(tmp_path):
    (tmp_path / "empty.png").write_bytes(b"")
    judge = ScriptedJudge(probabilities=[])
    out = metric("vqascore", judge=judge, cache=False).compute(predictions=[str(tmp_path / "empty.png")],
                                                             references=["a cat"])
    assert out["vqascore"] is None and out["scores"] == [None] and out["num_failed"] == 1 and not judge.queries


@pytest.mark.slow
def test_clip_score_reports_unreadable_images_per_image(mixed_images, tiny_models):
    images, readable = mixed_images
    clip = metric("clip_score", model=str(tiny_models["clip"]), device="cpu")
    prompts = [f"prompt {i}" for i in range(len(images))]
    out = clip.compute(predictions=images, references=prompts)
    alone = clip.compute(predictions=[images[0], images[2]], references=[prompts[0], prompts[2]])
    assert [s is not None for s in out["scores"]] == readable == [e is None for e in out["errors"]]
    assert [s for s in out["scores"] if s is not None] == pytest.approx(alone["scores"])
    assert out["clip_score"] == pytest.approx(alone["clip_score"])
    assert out["num_failed"] == 5 and "unreadable image" in out["errors"][3]


def test_clip_score_loads_its_model_at_first_use_and_names_it_when_it_cannot(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    clip = metric("clip_score")  # nothing is loaded yet: evaluate.load works offline
    with pytest.raises(CLIPLoadError) as caught:
        clip.compute(predictions=[Image.new("RGB", (8, 8))], references=["a cat"])
    message = str(caught.value)
    assert f"the default CLIP model {DEFAULT_CLIP_MODEL!r}" in message
    assert "HF_HUB_OFFLINE" in message
    assert 'model="<Hub id or local folder>"' in message
    assert isinstance(caught.value, OSError)  # what callers catching transformers' OSError expect

    with pytest.raises(CLIPLoadError, match="cannot load CLIP model 'someone/not-a-clip'.*Choose another"):
        metric("clip_score", model="someone/not-a-clip").compute(predictions=[Image.new("RGB", (8, 8))],
                                                                 references=["a cat"])


def test_clip_score_refuses_a_missing_folder_before_loading(tmp_path):
    with pytest.raises(CLIPLoadError, match=r"CLIP model folder '.*nowhere' does not exist"):
        metric("clip_score", model=str(tmp_path / "nowhere"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(CLIPLoadError, match="is a file, not a model folder"):
        metric("clip_score", model=str(tmp_path / "file"))
