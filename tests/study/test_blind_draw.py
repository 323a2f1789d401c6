"""A blind study stays blind (issue 50): its ids, names and sides cannot be recomputed by a rater, and the raters'
image copies carry nothing of the run they came from (format, mode, size, colour profile, text or time chunks)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageCms, PngImagePlugin

from t2ireason import cli
from t2ireason.runs import Run
from t2ireason.study.sample import make_study

from .runs import study_key

SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def _run(folder: Path, name: str, draw) -> Path:
    """An R2I-Bench run of the shipped sample whose image ``k`` is ``draw(k)``, saved as given (a PIL image and the
    keyword arguments of its ``save``)."""
    run = Run.create(folder / name, "r2i-bench", name=name)
    for k, row in enumerate(run.rows()):
        path = run.images_dir / run.bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        image, save = draw(k)
        image.save(path, **save)
    return run.path


def _plain(colour):
    return lambda k: (Image.new("RGB", (32, 32), colour), {})


def _page_items(folder: Path) -> dict:
    page = (folder / "index.html").read_text()
    return json.loads(re.search(r'id="study-data">(.*?)</script>', page, re.S).group(1))["items"]


def test_a_rater_cannot_recompute_the_sides_from_two_runs_of_their_own(tmp_path):
    """As found: with --seed 0 by default, a rater's replica (two runs of their own over the same prompts) had the
    study's ids and names, and named the first run's image of 12 of 12 items."""
    runs = [_run(tmp_path, "secret-x", _plain((200, 0, 0))), _run(tmp_path, "secret-y", _plain((0, 0, 200)))]
    mine = [_run(tmp_path, "mine-1", _plain((1, 1, 1))), _run(tmp_path, "mine-2", _plain((2, 2, 2)))]
    study = make_study(runs, tmp_path / "study")
    replica = make_study(mine, tmp_path / "replica")
    assert not set(_page_items(tmp_path / "study")) & set(_page_items(tmp_path / "replica"))
    names = lambda s: {img["file"] for it in s["items"] for img in it["images"]}  # noqa: E731
    assert not names(study) & names(replica)
    # the seed: secret (128 bits from secrets), in the key and nowhere in the raters' folder
    assert isinstance(study["seed"], int) and study["seed"] != replica["seed"] and study["seed"] >= 2 ** 64
    for path in (tmp_path / "study").rglob("*"):
        assert not path.is_file() or str(study["seed"]).encode() not in path.read_bytes()
    # the same study drawn again: into its folder (an interrupted draw resumed) from the key's seed, or elsewhere
    # from the seed the key holds (verified)
    assert make_study(runs, tmp_path / "study")["id"] == study["id"]
    again = make_study(runs, tmp_path / "verified", seed=study["seed"])
    assert again["id"] == study["id"] and again["items"] == study["items"] and again["queues"] == study["queues"]
    # a seed given by hand is reproducible, as before
    assert make_study(mine, tmp_path / "s1", seed=5)["items"] == make_study(mine, tmp_path / "s2", seed=5)["items"]


def test_ids_names_and_sides_are_not_a_mersenne_twister_stream(tmp_path):
    """Python's random.Random(seed) outputs reveal its state (624 words): the ids and names on the page would let a
    rater rebuild it and read every side. The study's draws come from SHA-256 of the seed and a counter."""
    import random

    runs = [_run(tmp_path, "x", _plain((200, 0, 0))), _run(tmp_path, "y", _plain((0, 0, 200)))]
    study = make_study(runs, tmp_path / "study", seed=11)
    twister = random.Random(11)
    words = [twister.getrandbits(32) for _ in range(20000)]
    # getrandbits(48) at any point of the stream: one word, then the top 16 bits of the next
    tokens = {f"{words[i] | (words[i + 1] >> 16) << 32:012x}" for i in range(len(words) - 1)}
    drawn = {it["id"][1:] for it in study["items"]} | {Path(i["file"]).stem for it in study["items"] for i in it["images"]}
    assert len(drawn) == 3 * len(study["items"]) and not drawn & tokens


def test_rate_warns_that_a_seed_given_by_hand_weakens_blindness(tmp_path, capsys):
    runs = [_run(tmp_path, "x", _plain((200, 0, 0))), _run(tmp_path, "y", _plain((0, 0, 200)))]
    assert cli.main(["rate", *map(str, runs), "--out", str(tmp_path / "a"), "--seed", "0"]) == 0
    err = capsys.readouterr().err
    assert "--seed 0" in err and "recompute which run made each image" in err and study_key(tmp_path / "a")["seed"] == 0
    assert cli.main(["rate", *map(str, runs), "--out", str(tmp_path / "b")]) == 0
    assert "warning" not in capsys.readouterr().err and study_key(tmp_path / "b")["seed"] >= 2 ** 64
    with pytest.raises(SystemExit):
        cli.main(["rate", *map(str, runs), "--out", str(tmp_path / "c"), "--seed", "-1"])
    assert "a seed is a whole number >= 0" in capsys.readouterr().err


# -- the raters' copies --------------------------------------------------------------------------------------------

def _chunks(path: Path) -> list[str]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    out, at = [], 8
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        out.append(data[at + 4:at + 8].decode("ascii"))
        at += 12 + length
    return out


def _tagged() -> dict:
    """PNG save arguments with a text chunk, a compressed text chunk, a time chunk and a resolution."""
    info = PngImagePlugin.PngInfo()
    info.add_text("parameters", "model-x, 30 steps")
    info.add_text("Software", "the generator", zip=True)
    info.add(b"tIME", bytes([7, 233, 11, 29, 3, 0, 0]))
    return {"pnginfo": info, "dpi": (300, 300)}


def _kinds(k: int):
    """Image ``k`` of run X: each file kind a generator or an editor writes, in turn."""
    colour = (40 + 9 * k % 200, 120, 60)
    kinds = [
        lambda: (Image.new("RGB", (64, 64), colour), {"icc_profile": SRGB}),
        lambda: (Image.new("RGBA", (48, 64), (*colour, 128)), {"icc_profile": SRGB}),
        lambda: (Image.new("L", (80, 80), colour[0]), {}),
        lambda: (Image.new("RGB", (64, 64), colour).convert("P", palette=Image.Palette.ADAPTIVE), {}),
        lambda: (Image.new("RGB", (96, 72), colour), _tagged()),
        lambda: (Image.new("LA", (64, 64), (colour[0], 255)), {}),
        lambda: (Image.fromarray(np.full((64, 64), colour[0] * 257, np.uint16)), {}),  # a 16-bit grey PNG
    ]
    return kinds[k % len(kinds)]()


def test_every_copy_is_one_format_mode_and_size_with_no_profile_text_or_time(tmp_path):
    """As found: an image with a colour profile got an sRGB iCCP chunk in its copy, one without none, and each run's
    size and mode were kept: each copy's run could be read from its file."""
    x = _run(tmp_path, "model-x", _kinds)
    y = _run(tmp_path, "model-y", lambda k: (Image.new("RGB", (128, 128), (90, 90, 9 * k % 256)), {}))
    study = make_study([x, y], tmp_path / "study")
    side = study["image_side"]
    assert side == 64  # the smallest longest side: no image enlarged past its own size
    seen = set()
    for it in study["items"]:
        for img in it["images"]:
            path = tmp_path / "study" / img["file"]
            with Image.open(path) as im:
                seen.add((im.format, im.mode, im.size, tuple(sorted(k for k in im.info if k != "dpi"))))
                assert "dpi" not in im.info
            assert _chunks(path) == ["IHDR"] + ["IDAT"] * (len(_chunks(path)) - 2) + ["IEND"]
    assert seen == {("PNG", "RGB", (side, side), ())}


def test_copies_keep_the_colours_people_see(tmp_path):
    """Converted to sRGB (an sRGB profile changes nothing), transparency laid on the page's white, a palette's and a
    grey image's colours kept, a non-square image centred on white."""
    x = _run(tmp_path, "model-x", _kinds)
    y = _run(tmp_path, "model-y", lambda k: (Image.new("RGB", (64, 64), (90, 90, 90)), {}))
    study = make_study([x, y], tmp_path / "study")
    run = Run.open(x)
    for it in study["items"]:
        img = next(i for i in it["images"] if i["run"] == "model-x")
        k = [run.bench.row_id(r) for r in run.rows()].index(it["row"])
        with Image.open(tmp_path / "study" / img["file"]) as im:
            middle = im.getpixel((32, 32))
            corner = im.getpixel((0, 0))
        colour = (40 + 9 * k % 200, 120, 60)
        expected = {0: colour, 1: tuple(round((c + 255) / 2) for c in colour), 2: (colour[0],) * 3, 3: colour,
                    4: colour, 5: (colour[0],) * 3, 6: (colour[0],) * 3}[k % 7]
        assert all(abs(a - b) <= 2 for a, b in zip(middle, expected)), (k, middle, expected)
        if k % 7 == 1:  # 48 x 64 scaled to 48 x 64 in 64 x 64: white bands left and right
            assert corner == (255, 255, 255)


def test_a_copy_of_an_image_with_a_profile_other_than_srgb_is_converted_then_stripped(tmp_path):
    """A Lab image (its profile a Lab one) is shown by a browser in sRGB: its copy holds those sRGB pixels."""
    lab = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB"))
    red = ImageCms.applyTransform(Image.new("RGB", (32, 32), (200, 30, 30)), ImageCms.buildTransform(
        ImageCms.createProfile("sRGB"), lab, "RGB", "LAB"))
    x = _run(tmp_path, "model-x", lambda k: (red, {"format": "TIFF", "icc_profile": lab.tobytes()}))
    y = _run(tmp_path, "model-y", _plain((9, 9, 9)))
    study = make_study([x, y], tmp_path / "study")
    img = next(i for it in study["items"] for i in it["images"] if i["run"] == "model-x")
    with Image.open(tmp_path / "study" / img["file"]) as im:
        assert im.mode == "RGB" and "icc_profile" not in im.info
        assert all(abs(a - b) <= 3 for a, b in zip(im.getpixel((5, 5)), (200, 30, 30))), im.getpixel((5, 5))


def test_png_chunks_helper_reads_what_pillow_writes(tmp_path):
    path = tmp_path / "a.png"
    image = Image.new("RGB", (4, 4))
    image.save(path, icc_profile=SRGB, **_tagged())
    assert {"iCCP", "tEXt", "zTXt", "tIME", "pHYs"} <= set(_chunks(path))
