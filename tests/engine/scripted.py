"""Inputs and scripted judge replies for the engine tests: what each record should become, stage by stage.

24 candidates: 10 captions (laion-0..9, each with an image), 8 imagination expansions of 12 seed prompts,
6 images to mine (text-0..5). The replies, as a function of the request (its metadata says which stage and
record it is about), decide:

- prompts: text-4 and text-5 hold no legible text (dropped);
- quality: laion-3 is blurred (dropped); imagination-2 never answers in JSON (failed after the re-asks, dropped);
- scoring: laion-5 reaches no threshold (dropped); text-1 fails the typographic filter (dropped);
  laion: entity 8, style 9 (even) or 7.5 (odd, under the test's style threshold 8);
  imagination: imagination 9 and affection 7; text: text_rendering 9, composition 8;
- captions: text-2's first text caption lists a string the caption does not quote (re-asked);
- gcot: text-0's first plan leaves out its string (revised, passes on attempt 2); imagination-4's plan
  always contradicts a spatial relation (rejected after 2 plans, no GCoT);
- original: even laion captions score 8 (kept), odd ones 4 (rejected);
- translate: text-3's first translation of its text caption loses the English string (re-asked).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from PIL import Image

THRESHOLDS = {"style": 8}
KEPT = {"laion": [0, 1, 2, 4, 6, 7, 8, 9], "imagination": [0, 1, 3, 4, 5, 6, 7], "text": [0, 2, 3]}
DROPPED = {"text-00000004": "prompts", "text-00000005": "prompts", "laion-00000003": "quality",
           "imagination-00000002": "quality", "laion-00000005": "scoring", "text-00000001": "scoring"}


def rid(source: str, i: int) -> str:
    return f"{source}-{i:08d}"


def labels(source: str, i: int) -> list[str]:
    return {"laion": ["entity", "style"] if i % 2 == 0 else ["entity"], "imagination": ["imagination", "affection"],
            "text": ["text_rendering", "composition"]}[source]


def make_inputs(root: Path) -> dict[str, str | int]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "laion").mkdir(exist_ok=True)
    rows = []
    for i in range(10):
        Image.new("RGB", (8, 8), (20 * i, 100, 50)).save(root / "laion" / f"{i}.png")
        rows.append({"caption": f"laion caption {i}", "image": f"laion/{i}.png"})
    (root / "captions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (root / "seeds.txt").write_text("\n".join(f"seed prompt {i}: a clock melting into a river" for i in range(12)))
    (root / "mine").mkdir(exist_ok=True)
    for i in range(6):
        Image.new("RGB", (8, 8), (10, 30 * i, 200)).save(root / "mine" / f"img{i}.png")
    return input_paths(root)


def input_paths(root: Path) -> dict[str, str | int]:
    """The Sources arguments for the inputs :func:`make_inputs` wrote under ``root``."""
    return {"captions": str(root / "captions.jsonl"), "seed_prompts": str(root / "seeds.txt"), "imagination": 8,
            "mine_images": str(root / "mine")}


def _gcot(record: str, source: str, i: int, attempt: int) -> dict:
    text = f' The sign says "SHOP {i}" in red.' if source == "text" and not (i == 0 and attempt == 1) else ""
    return {"gcot": f"Step 1: the subject of {record}. Step 2: the layout.{text}"}


def _check(record: str) -> dict:
    if record == "imagination-00000004":
        return {"entity_names_agree": True, "text_strings_agree": True, "spatial_relations_agree": False,
                "issues": ["the plan puts the moon left of the tower; the caption says right"]}
    return {"entity_names_agree": True, "text_strings_agree": True, "spatial_relations_agree": True, "issues": []}


def _scores(source: str, i: int) -> dict:
    scores = dict.fromkeys(("imagination", "entity", "text_rendering", "style", "affection", "composition"), 2)
    if source == "laion" and i != 5:
        scores |= {"entity": 8, "style": 9 if i % 2 == 0 else 7.5}
    elif source == "imagination":
        scores |= {"imagination": 9, "affection": 7}
    elif source == "text":
        scores |= {"text_rendering": 9, "composition": 8}
    return scores | {"justification": "scripted"}


def _caption(record: str, source: str, i: int, characteristic: str, attempt: int) -> dict:
    if characteristic == "text_rendering":
        texts = [f"SHOP {i}", "EXTRA"] if (i == 2 and attempt == 1) else [f"SHOP {i}"]
        return {"caption": f'A shop sign reads "SHOP {i}" in bold red letters.', "texts": texts}
    return {"caption": f"{characteristic} caption of {record}."}


def _translation(request, source: str, i: int, attempt: int) -> dict:
    english = request.messages[0].text.split("Caption:\n", 1)[1].rsplit("\n\nReply with", 1)[0]
    if source == "text" and i == 3 and attempt == 1 and request.metadata["key"] == "text_rendering":
        return {"translation": "一块商店招牌。"}
    return {"translation": f"译文：{english}"}


def reply(request) -> str:
    """The scripted reply to any request the engine sends."""
    stage, record = request.metadata["stage"], request.metadata["id"]
    source, i = record.rsplit("-", 1)[0], int(record.rsplit("-", 1)[1])
    attempt = (len(request.messages) + 1) // 2  # 1 for the first question, 2 after a re-ask or a revision
    if stage == "prompts":
        if source == "laion":
            value = {"prompt": f"A detailed photograph: laion caption {i}, rewritten."}
        elif source == "imagination":
            value = {"prompt": f"An imaginative scene number {i}: a whale made of glass."}
        elif i >= 4:
            value = {"legible_text": False, "texts": [], "caption": ""}
        else:
            value = {"legible_text": True, "texts": [f"SHOP {i}"], "caption": f'A storefront sign reading "SHOP {i}".'}
    elif stage == "quality":
        if record == "imagination-00000002":
            return "I cannot tell."
        bad = record == "laion-00000003"
        value = {"blur": bad, "artifacts": False, "structural_errors": False,
                 "verdict": "reject" if bad else "accept", "reason": "too blurry" if bad else "clean"}
    elif stage == "scoring":
        value = _scores(source, i)
    elif stage == "typography":
        bad = record == "text-00000001"
        value = {"verdict": "reject" if bad else "accept", "reason": "garbled letters" if bad else "legible"}
    elif stage == "captions":
        value = _caption(record, source, i, request.metadata["characteristic"], attempt)
    elif stage == "gcot":
        value = _gcot(record, source, i, attempt)
    elif stage == "gcot_check":
        value = _check(record)
    elif stage == "original":
        value = {"score": 8 if i % 2 == 0 else 4, "justification": "scripted"}
    elif stage == "translate":
        value = _translation(request, source, i, attempt)
    else:
        raise AssertionError(f"unexpected stage {stage}")
    return json.dumps(value, ensure_ascii=False)


class Replies:
    """:func:`reply` as a picklable callable for worker processes: optionally sleeping ``delay`` seconds per
    request (a model's cost) and noting the answering process's pid in the file ``pids`` (with its
    ``CUDA_VISIBLE_DEVICES`` in the file ``gpus``); all only for the requests of ``stage`` when it is given."""

    def __init__(self, delay: float = 0.0, pids: str | None = None, stage: str | None = None, gpus: str | None = None):
        self.delay, self.pids, self.stage, self.gpus = delay, pids, stage, gpus

    def __call__(self, request) -> str:
        if self.stage is not None and request.metadata["stage"] != self.stage:
            return reply(request)
        if self.pids:
            with open(self.pids, "a") as f:
                f.write(f"{os.getpid()}\n")
        if self.gpus:
            with open(self.gpus, "a") as f:
                f.write(f"{os.getpid()} {os.environ.get('CUDA_VISIBLE_DEVICES')}\n")
        if self.delay:
            time.sleep(self.delay)
        return reply(request)


class ScriptedDrawer:
    """A drawer without a model: each image a flat colour from its seed (so a release made by it is the
    same however the work is split), ``delay`` seconds per image to simulate a model's cost."""

    def __init__(self, delay: float = 0.0, size: int = 16):
        from t2ireason.generation import GenerationConfig

        self.delay, self.size = delay, size
        self.config = GenerationConfig(model="scripted-drawer", height=size, width=size, batch_size=4)

    def __call__(self, prompts, seeds):
        if self.delay:
            time.sleep(self.delay * len(prompts))
        return [Image.new("RGB", (self.size, self.size), tuple(int(s) >> k & 255 for k in (0, 8, 16))) for s in seeds]
