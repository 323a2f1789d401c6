"""A rating study drawn from runs: the sample, each image's raters, the folder sent to the raters and the
key the organiser keeps.

Two things are written, side by side::

    <study>/             the raters' folder: send it to them. It names no run and no model and orders
                         nothing by run
      index.html         the rating page (opens from file://, no server, no network), the study inside it
      images/            every image rated, re-encoded as an 8-bit RGB PNG, every one the same square size
                         (the smallest longest side among the images), without profile or metadata (a file's
                         format, mode, size or metadata could tell one run's images from another's), named by
                         an opaque token
      ratings/           where the raters' exported files go (``t2ireason agreement`` reads it)
    <study>.key.json     the key, which stays with the organiser: the study (its id, kind, the paper's
                         protocol, the seed, the sample drawn, every item with its prompt, what the rater
                         reads, its images with the run and image each comes from and its SHA-256), each
                         A/B/tie item's sides (which run's image the page lists first, drawn per item) and
                         each rater's queue (the items in the order shown; for A/B/tie whether that rater
                         sees the item's two images the other way round). ``agreement`` reads it.

The sample is drawn as the paper drew it: per group (dimension, track, category), ``per_group``
prompts at random among those every run has an image for and the benchmark can score (a prompt the
release gives no questions is left out: its ratings could never meet a judge's score), with a
generator seeded by ``seed`` alone; each run's image of a drawn prompt is an item (A/B/tie: one item
holds both runs' images). Item ids and image names are tokens drawn from the same generator, so the
page lists the items in an order that has nothing to do with the runs.

The seed is the study's secret: by default a 128-bit number from :mod:`secrets`, kept in the key only (the
same study is drawn again from it, and verified), never in the raters' folder. The generator is SHA-256 over
the seed and a counter (:class:`_KeyedRandom`), not Python's Mersenne Twister, whose state a rater could
rebuild from the ids and names on the page and then read every item's sides. A seed given by hand (``seed=``,
``--seed``) draws a reproducible study, but one a rater can guess (0, 1, 42...) lets them recompute the sides
from two runs of their own over the same prompts: ``rate`` warns. Each item is given to
``raters_per_item`` raters, the least loaded first (ties broken at random, seeded), so that the raters
share the work evenly; each rater sees their items in an order of their own.

The study's id is a digest of what it asks (runs, items, images, queues): drawing the same study again
gives the same id, so the raters' saved answers still belong to it; a folder holding another study is
never overwritten.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import random
import re
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..files import atomic_file, atomic_write_json, atomic_write_text, inside
from ..version import __version__
from .protocols import (
    KINDS,
    criterion_blocks,
    group_of,
    group_title,
    protocol,
    question_criterion,
    question_levels,
)

__all__ = ["make_study", "load_study", "key_file", "StudyError", "STUDY_FILE", "KEY_SUFFIX", "PAGE_FILE", "RATINGS_DIR",
           "finished_evaluations", "open_run", "file_digest", "judge_results", "run_letter"]

#: the study as a Hub dataset names it (and as studies drawn before the key was kept apart named it, inside the folder)
STUDY_FILE = "study.json"
#: the key beside the raters' folder: ``<study>.key.json``
KEY_SUFFIX = ".key.json"
PAGE_FILE = "index.html"
RATINGS_DIR = "ratings"
FORMAT = "t2ireason-study"


class StudyError(ValueError):
    """A study cannot be made or read as asked; the message says what to do."""


def key_file(folder: str | os.PathLike) -> Path:
    """The key of the raters' folder ``folder``: the file beside it, ``<folder>.key.json``."""
    folder = Path(folder)
    return folder.parent / f"{folder.name}{KEY_SUFFIX}"


def run_letter(item: dict[str, Any], page_letter: str) -> str:
    """Which run made the image of an A/B/tie item that the page lists ``page_letter`` (``a`` first, ``b``
    second): ``a`` the study's first run, ``b`` its second (the item's sides, drawn per item, say it)."""
    return "ab"[item.get("sides", [0, 1])["ab".index(page_letter)]]


def open_run(path: str | os.PathLike) -> Any:
    """The run in a run folder (:class:`t2ireason.runs.Run`)."""
    from ..runs import Run

    return Run.open(path)


def finished_evaluations(run: Any) -> list[str]:
    """The run's evaluations that have their scores (finished)."""
    from ..runs import RunError

    names = []
    for name in run.evaluations():
        try:
            run.scores(name)
        except RunError:
            continue
        names.append(name)
    return names


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _images(run: Any) -> dict[str, tuple[dict[str, Any], str, Path]]:
    """Each prompt's first image: row id -> (row, key, path)."""
    out: dict[str, tuple[dict[str, Any], str, Path]] = {}
    for key, row, path in run.image_items():
        out.setdefault(run.bench.row_id(row), (row, key, path))
    return out


def judge_results(run: Any, evaluation: str) -> dict[str, Any]:
    """The evaluation's scored images by image key, read from its ``results.jsonl`` as the run reads it
    (the last line of a key wins) without touching the file, and whether or not every image of the run
    is still there (one gone is one item left out, not the whole study)."""
    from ..results import ImageResult
    from ..runs import RESULTS_FILE, _read_results

    run.scores(evaluation)  # finished, or a clear error
    done, _ = _read_results(run.evaluation_dir(evaluation) / RESULTS_FILE, repair=False)  # a torn last line said
    return {key: ImageResult.from_dict(record) for key, record in done.items()}


def _evaluation_for_questions(runs: Sequence[Any], evaluation: str | None) -> str:
    common = [n for n in finished_evaluations(runs[0]) if all(n in finished_evaluations(r) for r in runs[1:])]
    if evaluation is not None:
        if evaluation not in common:
            raise StudyError(f"evaluation {evaluation!r} is not finished in every run (finished in all: "
                             f"{', '.join(common) or 'none'}); the judge's questions come from it")
        return evaluation
    if len(common) != 1:
        raise StudyError("a questions study rates the questions one evaluation asked: name it with --evaluation ("
                         f"finished in every run: {', '.join(common) or 'none; run the evaluate step first'})")
    return common[0]


def _assign(items: list[dict[str, Any]], raters: list[str], k: int, rng: random.Random) -> None:
    """Give each item to ``k`` raters, the least loaded first, ties broken at random."""
    load = dict.fromkeys(raters, 0)
    for i in rng.sample(range(len(items)), len(items)):
        tiebreak = {r: rng.random() for r in raters}
        chosen = sorted(raters, key=lambda r: (load[r], tiebreak[r]))[:k]
        for r in chosen:
            load[r] += 1
        items[i]["raters"] = sorted(chosen, key=raters.index)


def _rater_names(raters: int | Sequence[str]) -> list[str]:
    if isinstance(raters, int):
        if raters < 1:
            raise StudyError(f"a study needs at least one rater, got {raters}")
        return [f"rater{i}" for i in range(1, raters + 1)]
    names = [str(r).strip() for r in raters]
    bad = [n for n in names if not n or not all(c.isalnum() or c in "-_." for c in n)]
    if bad or len(set(names)) != len(names):
        raise StudyError(f"rater names must be distinct words of letters, digits, '-', '_' or '.'; got {list(raters)}")
    return names


def make_study(runs: Sequence[str | os.PathLike], out: str | os.PathLike, *, kind: str | None = None,
               per_group: int | None = None, raters: int | Sequence[str] | None = None,
               raters_per_item: int | None = None, seed: int | None = None, evaluation: str | None = None,
               title: str | None = None) -> dict[str, Any]:
    """Draw a rating study from ``runs`` (run folders of one benchmark) into the folder ``out``.

    ``seed``: None (the default) for a secret one, drawn from :mod:`secrets` and kept in the key (or the key's,
    where ``out`` already has one: an interrupted draw is resumed, the same study drawn again); a number of your
    own draws a reproducible study that a rater who guesses the number can unblind.

    ``kind``: ``"scale"``, ``"preference"`` (exactly two runs) or ``"questions"`` (the judge's questions
    of ``evaluation``); default the paper's (:data:`~t2ireason.study.protocols.PROTOCOLS`). ``raters``:
    how many (named ``rater1``...) or their names; default ``raters_per_item``, itself the paper's
    number of raters per image (3). Returns the study (as its key holds it, :func:`load_study`)."""
    opened = [open_run(r) for r in runs]
    if not opened:
        raise StudyError("name the run folder(s) whose images are rated")
    benchmarks = {r.manifest["benchmark"] for r in opened}
    if len(benchmarks) > 1:
        raise StudyError(f"the runs score different benchmarks ({', '.join(sorted(benchmarks))}): one study, one benchmark")
    names = [r.name for r in opened]
    if len(set(names)) != len(names):
        raise StudyError(f"two runs share the name {[n for n in names if names.count(n) > 1][0]!r}; rename one "
                         "(the name in its run.json)")
    bench = opened[0].manifest["benchmark"]
    proto = protocol(bench)
    kind = kind or proto.kind
    if kind not in KINDS:
        raise StudyError(f"unknown kind of study {kind!r}; one of {', '.join(KINDS)}")
    if kind == "preference" and len(opened) != 2:
        raise StudyError(f"an A/B/tie study compares two runs' images of each prompt; got {len(opened)} run(s)")
    if kind == "scale" and proto.scale is None:
        raise StudyError(f"{bench}'s paper has no rating scale; rate the judge's questions (--kind questions) "
                         "or compare two runs (--kind preference)")
    per_group = proto.per_group if per_group is None else per_group
    raters_per_item = proto.raters_per_item if raters_per_item is None else raters_per_item
    rater_ids = _rater_names(raters_per_item if raters is None else raters)
    if per_group < 1:
        raise StudyError(f"per_group (--per-group) must be at least 1, got {per_group}")
    if raters_per_item < 1:
        raise StudyError(f"raters_per_item (--raters-per-item) must be at least 1, got {raters_per_item}")
    if raters_per_item > len(rater_ids):
        raise StudyError(f"each image goes to {raters_per_item} raters (raters_per_item, --raters-per-item; the "
                         f"paper's: {proto.raters_per_item}) "
                         f"but the study has {len(rater_ids)} (raters, --raters): give --raters "
                         f"{raters_per_item} or more, or --raters-per-item {len(rater_ids)} or fewer")
    evaluation = _evaluation_for_questions(opened, evaluation) if kind == "questions" else None
    judged = [judge_results(r, evaluation) for r in opened] if evaluation else None

    images = [_images(r) for r in opened]
    bench_obj = opened[0].bench
    common, unscorable = [], {}
    for rid in images[0]:
        if not all(rid in imgs for imgs in images[1:]):
            continue
        why = bench_obj.unscorable(images[0][rid][0])
        if why is None and judged is not None and not all(_questions_of(judged[j], images[j][rid][1])
                                                          for j in range(len(opened))):
            why = f"evaluation {evaluation} asked no question about its image"
        if why is None:
            common.append(rid)
        else:
            unscorable[rid] = why
    groups: dict[str, list[str]] = {}
    for rid in common:
        groups.setdefault(group_of(bench, images[0][rid][0]), []).append(rid)
    if seed is None:
        seed = _kept_seed(Path(out))
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise StudyError(f"the study's seed must be a whole number >= 0, got {seed!r}")
    rng = _KeyedRandom(seed)
    sample = {g: sorted(rng.sample(ids, min(per_group, len(ids))), key=ids.index) for g, ids in groups.items()}
    tokens = _Tokens(rng)

    items: list[dict[str, Any]] = []
    for g, ids in sample.items():
        for rid in ids:
            row = images[0][rid][0]
            per_item = [list(range(len(opened)))] if kind == "preference" else [[j] for j in range(len(opened))]
            for which in per_item:
                item = {"id": tokens.new("i"), "row": rid, "group": g, "prompt": opened[0].bench.prompt(row),
                        "criterion": criterion_blocks(bench, kind, row),
                        "images": [{"run": names[j], "key": images[j][rid][1], "source": images[j][rid][2]}
                                   for j in which],
                        # the order the page lists the item's images in (indexes into images), drawn per item
                        "sides": rng.sample(range(len(which)), len(which))}
                if judged is not None:
                    result = judged[which[0]][item["images"][0]["key"]]
                    item["questions"] = [
                        {"id": q.id or f"q{n}", "question": q.question, "group": q.group,
                         "criterion": question_criterion(bench, row, q),
                         "levels": [list(level) for level in question_levels(bench, q)]}
                        for n, q in enumerate(result.questions, 1)]
                items.append(item)
    if not items:
        raise StudyError("no prompt has an image in every run that the benchmark can score: nothing to rate"
                         + (f" ({len(unscorable)} left out: {next(iter(unscorable.values()))})" if unscorable else ""))
    _assign(items, rater_ids, raters_per_item, rng)
    queues = {}
    for r in rater_ids:
        mine = [it["id"] for it in items if r in it["raters"]]
        queues[r] = [{"item": i, **({"swap": rng.random() < 0.5} if kind == "preference" else {})}
                     for i in rng.sample(mine, len(mine))]

    sources = {}
    for it in items:  # each image's copy in the folder, named by a token (nothing of the run or the row in it)
        for img in it["images"]:
            source = img.pop("source")
            img["file"] = f"images/{tokens.new('')}.png"
            img["sha256"] = file_digest(source)
            sources[img["file"]] = source
    study = {
        "format": FORMAT, "version": 2, "id": "", "title": "", "kind": kind, "benchmark": bench,
        "protocol": {"source": proto.source if kind == proto.kind else
                     f"the judge's own questions and criteria (evaluation {evaluation})" if kind == "questions" else
                     f"an A/B/tie comparison as R2I-Bench's (seed 003, appendix B.2) of {bench} images",
                     "table": proto.table if kind == proto.kind else f"{kind} agreement",
                     "paper_sample": proto.paper_sample and kind == proto.kind,
                     "scale": list(proto.scale) if kind == "scale" else None},
        "seed": seed, "per_group": per_group, "raters_per_item": raters_per_item, "raters": rater_ids,
        "runs": [{"name": r.name, "evaluation": evaluation} for r in opened],
        "groups": {g: group_title(bench, g) for g in sample},
        "sample": sample, "prompts_in_every_run": len(common) + len(unscorable), "unscorable": unscorable,
        "items": items, "queues": queues,
        "image_side": _copy_side(list(sources.values())),  # every copy this square, in pixels
    }
    study["id"] = f"{bench}-{kind}-{_study_digest(study)}"
    study["title"] = _blind_title(title, opened, bench_obj.pretty_name, kind)
    _write(study, Path(out), sources)
    return load_study(out)


_TASKS = {"scale": "rate each image", "preference": "which of two images fits its prompt better",
          "questions": "answer the judge's questions about each image"}


def _blind_title(title: str | None, runs: Sequence[Any], benchmark: str, kind: str) -> str:
    """The page's title: the one given, unless it names a run or its model (the raters would read it)."""
    if title is None:
        return f"{benchmark} human study: {_TASKS[kind]}"
    for run in runs:
        model = (run.manifest.get("generation") or {}).get("model")
        for name in filter(None, (run.name, model and Path(str(model)).name)):
            if re.search(rf"(?<![\w]){re.escape(str(name))}(?![\w])", title, re.IGNORECASE):
                raise StudyError(f"the title {title!r} names {name!r} ({'run' if name == run.name else 'the model of run'} "
                                 f"{run.name}), which the raters would read: a study's page names no run or model")
    return title


def _kept_seed(out: Path) -> int:
    """The seed of the study already drawn into ``out`` (its key's), or a new secret one."""
    key = key_file(out)
    if key.is_file():
        try:
            seed = json.loads(key.read_text(encoding="utf-8")).get("seed")
        except (ValueError, AttributeError):
            seed = None
        if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
            return seed
    return secrets.randbits(128)


class _KeyedRandom(random.Random):
    """:class:`random.Random`'s draws (``sample``, ``random``, ``getrandbits``...) from SHA-256 of the seed and a
    counter: the same seed, the same study; what the page shows of the draws (ids, names, orders) tells nothing of
    the seed or of the other draws, as the Mersenne Twister's outputs would (its state is linear in them)."""

    def seed(self, a: Any = None, version: int = 2) -> None:  # random.Random.__init__ calls it
        self._key = hashlib.sha256(f"t2ireason-study:{a}".encode()).digest()
        self._counter, self._pool = 0, b""

    def _bytes(self, n: int) -> bytes:
        while len(self._pool) < n:
            self._pool += hashlib.sha256(self._key + self._counter.to_bytes(8, "big")).digest()
            self._counter += 1
        out, self._pool = self._pool[:n], self._pool[n:]
        return out

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        return int.from_bytes(self._bytes((k + 7) // 8), "big") >> (-k % 8)

    def random(self) -> float:
        return self.getrandbits(53) * 2.0 ** -53

    def getstate(self) -> Any:
        return (self._key, self._counter, self._pool)

    def setstate(self, state: Any) -> None:
        self._key, self._counter, self._pool = state


class _Tokens:
    """Opaque names drawn from the study's seeded generator, none twice: the same draw, the same names."""

    def __init__(self, rng: random.Random):
        self.rng, self.seen = rng, set()

    def new(self, prefix: str) -> str:
        while True:
            token = f"{prefix}{self.rng.getrandbits(48):012x}"
            if token not in self.seen:
                self.seen.add(token)
                return token


def _questions_of(judged: dict[str, Any], key: str) -> bool:
    """Whether the judge asked questions about the image ``key`` (a questions study rates nothing else)."""
    result = judged.get(key)
    return result is not None and bool(result.questions)


def _study_digest(study: dict[str, Any]) -> str:
    """What the study asks, hashed: the same draw gives the same id (the raters' saved answers stay its)."""
    content = {k: v for k, v in study.items() if k not in ("id", "title")}
    text = json.dumps(content, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _write(study: dict[str, Any], out: Path, sources: dict[str, Path]) -> None:
    from .page import render_page

    key = key_file(out)
    if key.is_file():
        try:
            there = json.loads(key.read_text(encoding="utf-8"))
        except ValueError:
            there = {}
        if there.get("id") != study["id"]:
            raise StudyError(f"{out} holds another study ({there.get('id') or f'unreadable {key.name}'}); its raters "
                             "may have started: draw this one into another folder")
        study["created"] = there.get("created")
    elif (out / STUDY_FILE).is_file():
        raise StudyError(f"{out} holds another study (its {STUDY_FILE}); its raters may have started: draw this one "
                         "into another folder")
    elif out.exists() and (not out.is_dir() or any(p.name != RATINGS_DIR for p in out.iterdir())):
        raise StudyError(f"{out} exists and is not an empty folder: draw the study into a new folder")
    study["created"] = study.get("created") or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    study["t2ireason_version"] = __version__
    (out / "images").mkdir(parents=True, exist_ok=True)
    (out / RATINGS_DIR).mkdir(exist_ok=True)
    atomic_write_json(key, study)  # first: an interrupted draw is resumed by the same command, never refused
    for it in study["items"]:
        for img in it["images"]:
            target = inside(out, img["file"])
            if not target.is_file():
                _bare_copy(sources[img["file"]], target, study["image_side"])
    atomic_write_text(out / PAGE_FILE, render_page(study))


#: what a transparent part of an image is laid on, and what fills a copy around an image that is not square: the
#: white of the page's image frames, so a copy looks as its image would on the page
BACKGROUND = (255, 255, 255)


def _copy_side(sources: Sequence[Path]) -> int:
    """The side of every copy, in pixels: the smallest longest side among the study's images, so no image is
    enlarged past its own size and every copy is the same square (a run's larger images, or ones of another
    shape, would tell its copies apart)."""
    from PIL import Image

    sides = []
    for source in sources:
        try:
            with Image.open(source) as im:
                sides.append(max(im.size))
        except (OSError, ValueError) as e:
            raise StudyError(f"the image {source} cannot be copied into the study ({type(e).__name__}: {e})") from None
    return min(sides)


def _bare_copy(source: Path, target: Path, side: int) -> None:
    """``source``'s pixels, and nothing else, as an 8-bit RGB PNG of ``side`` x ``side``, the same for every copy
    of a study whatever the image's own format, mode, size or metadata (any of them could tell one run's images
    from another's): the colours of an embedded profile converted to sRGB first (as a browser shows them), then
    no profile kept; a transparent part laid on :data:`BACKGROUND`; scaled (Lanczos) to fit the square, keeping
    its shape, and centred on :data:`BACKGROUND`; written from a new image, so no text, time, profile, EXIF or
    resolution chunk of the source's reaches the copy."""
    import numpy as np
    from PIL import Image, ImageCms

    try:
        with Image.open(source) as im:
            im.load()
            profile = im.info.get("icc_profile")
            if im.mode.startswith("I;16"):  # a 16-bit grey PNG: its 0-65535 onto 0-255 (a plain convert clips at 255)
                im = Image.fromarray((np.asarray(im, dtype=np.float64) / 257).round().astype(np.uint8), "L")
            if im.mode in ("P", "PA") or (im.mode in ("L", "RGB") and "transparency" in im.info):
                im = im.convert("RGBA")  # a palette's, or a colour key's, transparency as an alpha band
            alpha = im.getchannel("A") if im.mode in ("LA", "RGBA", "La", "RGBa") else None
            base = {"LA": "L", "La": "L", "RGBA": "RGB", "RGBa": "RGB"}.get(im.mode, im.mode)
            colour = im.convert(base) if base != im.mode else im
            if profile:
                colour = ImageCms.profileToProfile(colour, io.BytesIO(profile), ImageCms.createProfile("sRGB"),
                                                   outputMode="RGB")
            picture = Image.new("RGB", im.size, BACKGROUND)
            picture.paste(colour.convert("RGB"), mask=alpha)
        scale = side / max(picture.size)
        fit = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
        if fit != picture.size:
            picture = picture.resize(fit, Image.Resampling.LANCZOS)
        copy = Image.new("RGB", (side, side), BACKGROUND)
        copy.paste(picture, ((side - fit[0]) // 2, (side - fit[1]) // 2))
        with atomic_file(target) as f:
            copy.save(f, format="PNG")
    except (OSError, ValueError, ImageCms.PyCMSError) as e:
        raise StudyError(f"the image {source} cannot be copied into the study ({type(e).__name__}: {e})") from None


def load_study(path: str | os.PathLike) -> dict[str, Any]:
    """The study of its key (``<study>.key.json``), or of its raters' folder (the key beside it), with
    ``folder`` (the raters' folder) and ``key_file`` put in. A study drawn before the key was kept apart
    (its ``study.json`` inside the folder) is read too."""
    path = Path(path)
    if path.is_file():
        if not path.name.endswith(KEY_SUFFIX) and path.name != STUDY_FILE:
            raise StudyError(f"{path} is not a study's key: the key of the raters' folder <study> is <study>{KEY_SUFFIX}, "
                             "beside it")
        file = path
    elif key_file(path).is_file():
        file = key_file(path)
    elif (path / STUDY_FILE).is_file():
        file = path / STUDY_FILE
    else:
        raise StudyError(f"{path} is not a study: no key {key_file(path).name} beside it; draw one with "
                         "`t2ireason rate`, or name the key file")
    try:
        study = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as e:
        raise StudyError(f"{file} is not valid JSON ({e})") from None
    if not isinstance(study, dict) or study.get("format") != FORMAT:
        raise StudyError(f"{file} is not a t2i-reason study")
    inside_folder = file.name == STUDY_FILE
    study["folder"] = str(file.parent if inside_folder else file.parent / file.name[:-len(KEY_SUFFIX)])
    study["key_file"] = str(file)
    return study
