"""as_image and JudgeImage: every input form, content digests, memoised resizing and encoding, errors."""

import base64
import io
import re

import numpy as np
import pytest
from PIL import Image

from t2ireason.images import ImageError, JudgeImage, as_image
from t2ireason.judges import ChatRequest


@pytest.fixture
def picture():
    """A 12x8 RGB picture with distinct pixels (so any flip, crop or channel swap shows)."""
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 256, (8, 12, 3), dtype=np.uint8))


def png_bytes(img):
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def test_every_form_of_one_picture_gives_one_digest(picture, tmp_path):
    path = tmp_path / "pic.png"
    picture.save(path)
    arr = np.asarray(picture)
    forms = {
        "PIL": picture,
        "JudgeImage": JudgeImage(picture),
        "Path": path,
        "str path": str(path),
        "relative path": ("pic.png", {"base_dir": tmp_path}),
        "bytes": png_bytes(picture),
        "bytearray": bytearray(png_bytes(picture)),
        "memoryview": memoryview(png_bytes(picture)),
        "numpy uint8": arr,
        "numpy float": arr / 255.0,
        "numpy float32": (arr / 255.0).astype(np.float32),
        "numpy RGBA opaque": np.dstack([arr, np.full(arr.shape[:2], 255, np.uint8)]),
        "PIL RGBA": picture.convert("RGBA"),
        "datasets bytes": {"bytes": png_bytes(picture), "path": None},
        "datasets bytes and path": {"bytes": png_bytes(picture), "path": "pic.png"},
        "datasets path": {"bytes": None, "path": str(path)},
    }
    expected = JudgeImage(picture).digest
    for name, form in forms.items():
        x, kw = form if isinstance(form, tuple) else (form, {})
        img = as_image(x, **kw)
        assert img.size == (12, 8), name
        assert img.image.mode == "RGB", name
        assert img.digest == expected, name


def test_grayscale_forms(tmp_path):
    gray = np.arange(24, dtype=np.uint8).reshape(4, 6) * 10
    digest = as_image(Image.fromarray(gray)).digest
    assert as_image(gray).digest == digest
    assert as_image(gray[..., None]).digest == digest  # HxWx1
    assert as_image(gray / 255.0).digest == digest
    assert as_image(gray).image.getpixel((1, 0)) == (10, 10, 10)
    mask = as_image(np.array([[True, False]]))
    assert mask.image.getpixel((0, 0)) == (255, 255, 255) and mask.image.getpixel((1, 0)) == (0, 0, 0)


def test_datasets_image_column_without_decoding(picture, tmp_path):
    datasets = pytest.importorskip("datasets")
    path = tmp_path / "pic.png"
    picture.save(path)
    ds = datasets.Dataset.from_dict({"image": [str(path)]}).cast_column("image", datasets.Image(decode=False))
    row = ds[0]["image"]
    assert isinstance(row, dict)
    assert as_image(row).digest == as_image(picture).digest
    decoded = datasets.Dataset.from_dict({"image": [picture]}, features=datasets.Features(
        {"image": datasets.Image()}))[0]["image"]
    assert as_image(decoded).digest == as_image(picture).digest


def test_digest_depends_on_pixels_and_shape_only():
    black = np.zeros((2, 3, 3), np.uint8)
    assert as_image(black).digest != as_image(black.reshape(3, 2, 3)).digest  # same bytes, other shape
    changed = black.copy()
    changed[1, 2, 0] = 1
    assert as_image(black).digest != as_image(changed).digest
    # equal content makes equal images and equal requests, whatever the source
    a, b = as_image(black), as_image(Image.fromarray(black))
    assert a == b and len({a, b}) == 1 and a is not b
    assert ChatRequest.simple(a, "q") == ChatRequest.simple(b, "q")


def test_as_image_returns_judge_images_unchanged(picture):
    img = as_image(picture)
    assert as_image(img) is img


def test_resized_keeps_aspect_within_budget_and_is_memoised(picture, monkeypatch):
    big = as_image(picture.resize((400, 200)))
    calls = []
    real_resize = Image.Image.resize
    monkeypatch.setattr(Image.Image, "resize", lambda self, *a, **k: calls.append(a) or real_resize(self, *a, **k))
    small = big.resized(max_pixels=20_000)
    assert small.width * small.height <= 20_000 and small.size == (200, 100)
    assert big.resized(max_pixels=20_000) is small and len(calls) == 1
    up = big.resized(min_pixels=320_000)
    assert up.size == (800, 400) and len(calls) == 2
    assert big.resized() is big.image and big.resized(max_pixels=10**9) is big.image and len(calls) == 2


def test_data_url_round_trips_and_is_encoded_once(picture, monkeypatch):
    img = as_image(picture)
    saves = []
    real_save = Image.Image.save
    monkeypatch.setattr(Image.Image, "save", lambda self, *a, **k: saves.append(k.get("format")) or
                        real_save(self, *a, **k))
    url = img.data_url()
    assert url.startswith("data:image/png;base64,")
    assert img.data_url() is url and saves == ["PNG"]
    decoded = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert as_image(decoded).digest == img.digest
    jpeg = img.data_url("jpeg", quality=80)
    assert jpeg.startswith("data:image/jpeg;base64,") and saves == ["PNG", "JPEG"]
    assert img.data_url("JPEG", quality=80) is jpeg
    small = img.data_url(max_pixels=24)
    assert Image.open(io.BytesIO(base64.b64decode(small.split(",", 1)[1]))).size == (6, 4)


def test_repr_names_source_and_digest(picture, tmp_path):
    path = tmp_path / "pic.png"
    picture.save(path)
    r = repr(as_image(path))
    assert "12x8" in r and str(path) in r and as_image(path).digest[:12] in r


@pytest.mark.parametrize("bad, message", [
    (None, "missing \\(None\\)"),
    (b"definitely not an image", "cannot read image <bytes>"),
    (b"", "cannot read image <bytes>"),
    ({"bytes": None, "path": None}, "neither 'bytes' nor 'path'"),
    ({"bytes": b"\x89PNG garbage", "path": "x.png"}, "cannot read image x.png"),
    (42, "unsupported image type int"),
    (np.zeros((4, 4, 2), np.uint8), "got shape \\(4, 4, 2\\)"),
    (np.zeros((1, 4, 4, 3), np.uint8), "got shape \\(1, 4, 4, 3\\)"),
    (np.zeros((0, 4, 3), np.uint8), "got shape \\(0, 4, 3\\)"),
    (np.zeros(5, np.uint8), "got shape \\(5,\\)"),
    (np.full((2, 2, 3), 128.0), "float numpy image values must lie in \\[0, 1\\]; got \\[128.0, 128.0\\]"),
    (np.full((2, 2), np.nan), "must lie in \\[0, 1\\]"),
    (np.full((2, 2), 300, np.int64), "integer numpy image values must lie in \\[0, 255\\]"),
    (np.full((2, 2), -1, np.int16), "must lie in \\[0, 255\\]"),
    (np.zeros((2, 2), object), "dtype must be integer, bool or float; got object"),
])
def test_bad_inputs_raise_image_error_naming_the_problem(bad, message):
    with pytest.raises(ImageError, match=message):
        as_image(bad)


def test_missing_and_unreadable_files(tmp_path):
    missing = tmp_path / "nope.png"
    with pytest.raises(ImageError, match=f"image file not found: {missing}"):
        as_image(missing)
    with pytest.raises(ImageError, match="image file not found: .*rel.png"):
        as_image({"path": "rel.png"}, base_dir=tmp_path)
    garbage = tmp_path / "garbage.png"
    garbage.write_bytes(b"\x00" * 100)
    with pytest.raises(ImageError, match=f"cannot read image {garbage}"):
        as_image(garbage)
    with pytest.raises(ImageError, match="cannot read image"):
        as_image(tmp_path)  # a directory


# -- images reach judges as they are -------------------------------------------------------------

def test_a_file_is_sent_as_its_own_bytes_with_its_media_type(picture, tmp_path, monkeypatch):
    for fmt, mime in (("PNG", "image/png"), ("JPEG", "image/jpeg"), ("WEBP", "image/webp")):
        path = tmp_path / f"pic.{fmt.lower()}"
        picture.save(path, format=fmt)
        img = as_image(path)
        saves = []
        monkeypatch.setattr(Image.Image, "save", lambda self, *a, _saves=saves, **k: _saves.append(1))
        assert img.encoded() == (mime, path.read_bytes())  # bit for bit, nothing re-encoded
        assert img.data_url() == f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode()
        assert img.encoded(fmt) == (mime, path.read_bytes())  # asking for its own format changes nothing
        assert saves == []
        monkeypatch.undo()


def test_bytes_and_datasets_dicts_keep_their_bytes(picture):
    data = png_bytes(picture)
    assert as_image(data).encoded() == ("image/png", data)
    assert as_image({"bytes": data, "path": "x.png"}).encoded() == ("image/png", data)


def test_in_memory_images_are_encoded_losslessly(picture):
    mime, data = as_image(picture).encoded()
    assert mime == "image/png"
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")), np.asarray(picture))


def test_reencoding_and_resizing_only_when_asked(picture, tmp_path):
    path = tmp_path / "pic.png"
    picture.save(path)
    img = as_image(path)
    mime, jpeg = img.encoded("JPEG", quality=80)
    assert mime == "image/jpeg" and Image.open(io.BytesIO(jpeg)).format == "JPEG"
    mime, small = img.encoded(max_pixels=24)  # a resize needs an encode: lossless PNG
    assert mime == "image/png" and Image.open(io.BytesIO(small)).size == (6, 4)
    with pytest.raises(ValueError, match="image format"):
        img.encoded("TIFF")


def test_a_png_missing_its_end_is_refused(picture, tmp_path):
    whole = png_bytes(picture)
    assert whole.endswith(b"IEND\xaeB`\x82")
    cut = whole[:-12]  # every pixel row is there, the IEND chunk is not
    with pytest.raises(ImageError, match="incomplete"):
        as_image(cut)
    (tmp_path / "cut.png").write_bytes(cut)
    with pytest.raises(ImageError, match=r"cut\.png.*incomplete"):
        as_image(tmp_path / "cut.png")


def test_empty_file_and_decompression_bomb_are_refused(tmp_path, monkeypatch):
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(ImageError, match=r"empty\.png.*empty \(0 bytes\)"):
        as_image(tmp_path / "empty.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 50)  # a 12x8 picture is a "bomb" under this limit
    with pytest.raises(ImageError, match="refusing image"):
        as_image(png_bytes(Image.new("RGB", (12, 8))))


def test_load_images_gives_each_image_its_own_failure(picture, tmp_path):
    from t2ireason.images import load_images

    (tmp_path / "zero.png").write_bytes(b"")
    out = load_images([picture, tmp_path / "zero.png", tmp_path / "absent.png", b"not an image"])
    assert isinstance(out[0], JudgeImage)
    assert [type(x).__name__ for x in out[1:]] == ["ImageError"] * 3
    assert "not found" in str(out[2])


def test_threads_decode_what_one_thread_would_in_the_same_order(tmp_path, monkeypatch):
    """load_images decodes with several threads (a GPU judge's pairs would otherwise each wait for a PNG
    decode): each image, digest and failure is what one thread gives, in input order, and the bomb check
    (a warnings filter, process-wide state) neither lets a bomb through nor stays behind in the filters."""
    import warnings

    from t2ireason.images import load_images

    rng = np.random.default_rng(1)
    inputs = []
    for i in range(24):
        side = 40 if i % 5 == 0 else 8  # every fifth: a "bomb" under the limit set below
        path = tmp_path / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)).save(path)
        inputs.append(path)
    (tmp_path / "zero.png").write_bytes(b"")
    inputs[3:3] = [tmp_path / "zero.png", tmp_path / "absent.png", b"not an image"]
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    filters = list(warnings.filters)

    def outcome(x):
        return x.digest if isinstance(x, JudgeImage) else re.sub(" at 0x[0-9a-f]+", "", f"{type(x).__name__}: {x}")

    serial = [outcome(x) for x in load_images(inputs, workers=1)]
    for _ in range(3):
        assert [outcome(x) for x in load_images(inputs, workers=4)] == serial
    assert sum("refusing image" in x for x in serial) == 5 and sum(len(x) == 64 for x in serial) == 19
    assert warnings.filters == filters


def test_inside_refuses_paths_made_from_data_that_leave_their_folder(tmp_path):
    from t2ireason.files import UnsafePath, inside

    assert inside(tmp_path, "a", "b.png") == tmp_path / "a" / "b.png"
    for bad in ("../../outside/x.png", "/etc/passwd", "a/../../x"):
        with pytest.raises(UnsafePath, match="leaves the folder"):
            inside(tmp_path, bad)
    (tmp_path / "link").symlink_to(tmp_path.parent)
    with pytest.raises(UnsafePath):
        inside(tmp_path, "link", "x.png")


def test_data_url_bytes_is_the_data_url_memoised_and_can_be_asked_without_computing(picture, tmp_path):
    from t2ireason.images import as_image

    path = tmp_path / "p.png"
    picture.save(path)
    image = as_image(path)
    assert image.data_url_bytes(compute=False) is None  # not computed yet: a caller can compute it elsewhere
    url = image.data_url_bytes()
    assert url.decode("ascii") == image.data_url() and url.startswith(b"data:image/png;base64,")
    assert image.data_url_bytes(compute=False) is url and image.data_url_bytes() is url
    assert image.data_url_bytes("JPEG", compute=False) is None and image.data_url_bytes("JPEG").startswith(
        b"data:image/jpeg;base64,")


# -- qwen_vl_utils' preparation: sizes worked out by hand from its rules ---------------------------------

@pytest.mark.parametrize("height, width, bounds, expected", [
    # 1024 / 28 = 36.57 rounds to 37: 1036 x 1036 = 1,073,296 pixels, within 4*28*28 .. 16384*28*28
    (1024, 1024, {}, (1036, 1036)),
    # 3000 / 28 = 107.14 -> 107 (2996), 4000 / 28 = 142.86 -> 143 (4004): 11,995,984 <= 12,845,056
    (3000, 4000, {}, (2996, 4004)),
    # Python's round sends a half to the even integer: 42 / 28 = 1.5 -> 2 (56), 70 / 28 = 2.5 -> 2 (56),
    # not 3 (84); 56 x 56 = 3136 is exactly the minimum, kept
    (42, 70, {}, (56, 56)),
    # 14 x 14 rounds to 0 tiles, held at 28 x 28 = 784 < 3136: scaled by sqrt(3136 / 196) = 4 and rounded
    # up, 14 * 4 / 28 = 2 -> 56
    (14, 14, {}, (56, 56)),
    # the processor's bounds in eval_qwen25.py: 1036 x 1036 > 1280*28*28 = 1,003,520, so both sides
    # scale by sqrt(1024^2 / 1003520) = 1.0222 and round down: 1024 / 1.0222 / 28 = 35.78 -> 35 (980)
    (1024, 1024, {"min_pixels": 256 * 28 * 28, "max_pixels": 1280 * 28 * 28}, (980, 980)),
    # 100 x 50 rounds to 112 x 56 = 6272 < 256*28*28 = 200,704: scaled by sqrt(200704 / 5000) = 6.3357 and
    # rounded up: 100 * 6.3357 / 28 = 22.63 -> 23 (644), 50 * 6.3357 / 28 = 11.31 -> 12 (336)
    (100, 50, {"min_pixels": 256 * 28 * 28, "max_pixels": 1280 * 28 * 28}, (644, 336)),
])
def test_smart_resize_follows_qwen_vl_utils_rules(height, width, bounds, expected):
    from t2ireason.images import smart_resize

    assert smart_resize(height, width, **bounds) == expected


def test_smart_resize_refuses_an_aspect_over_200():
    from t2ireason.images import smart_resize

    assert smart_resize(28, 28 * 200) == (28, 5600)
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 2001)


def test_on_white_composites_rgba_only_as_to_rgb_does():
    from t2ireason.images import on_white

    rgba = np.zeros((4, 4, 4), dtype=np.uint8)
    rgba[0, 0] = (200, 0, 0, 0)  # transparent red -> white
    rgba[0, 1] = (200, 0, 0, 255)  # opaque red stays
    rgba[0, 2] = (0, 0, 200, 128)  # half-transparent blue -> blended with white
    out = on_white(Image.fromarray(rgba, "RGBA"))
    assert out.mode == "RGB" and out.getpixel((0, 0)) == (255, 255, 255) and out.getpixel((1, 0)) == (200, 0, 0)
    r, g, b = out.getpixel((2, 0))
    assert abs(r - 127) <= 1 and abs(g - 127) <= 1 and abs(b - 227) <= 1
    la = Image.fromarray(np.array([[[90, 0]]], dtype=np.uint8), "LA")  # not RGBA: PIL's convert, alpha dropped
    assert on_white(la).getpixel((0, 0)) == (90, 90, 90)


def test_prepare_reaches_every_input_form_and_drops_the_file_bytes(tmp_path):
    from t2ireason.images import load_images, qwen_vl_utils_image

    rgba = np.zeros((20, 24, 4), dtype=np.uint8)
    rgba[..., 1] = 180  # transparent green
    picture = Image.fromarray(rgba, "RGBA")
    path = tmp_path / "a.png"
    picture.save(path)
    forms = [str(path), path.read_bytes(), {"bytes": path.read_bytes(), "path": str(path)}, picture, rgba]
    images = load_images(forms, prepare=qwen_vl_utils_image)
    white = Image.new("RGB", (84, 56), (255, 255, 255)).tobytes()
    for image in images:
        assert image.size == (84, 56) and image.image.tobytes() == white and image.data is None
        assert image.encoded()[0] == "image/png"  # sent as the prepared picture, not the file
    assert as_image(str(path)).image.getpixel((0, 0)) == (0, 180, 0)  # unprepared: PIL drops alpha
    [failed] = load_images([Image.new("RGB", (2010, 10))], prepare=qwen_vl_utils_image)
    assert isinstance(failed, ImageError) and "aspect ratio" in str(failed)


def test_pil_reencoded_is_what_pil_writes_again(tmp_path, picture):
    path = tmp_path / "pic.png"
    picture.save(path, compress_level=0)
    image = as_image(str(path))
    again = image.pil_reencoded()
    buf = io.BytesIO()
    Image.open(path).save(buf, format="PNG")
    assert again.data == buf.getvalue() != path.read_bytes() and again.format == "PNG"
    assert again.digest == image.digest and image.pil_reencoded() is again  # the same picture, memoised
    in_memory = as_image(picture)
    assert in_memory.pil_reencoded() is in_memory  # no file: its PNG, as it is


def test_a_bad_image_is_named_by_its_path_or_place_and_type_never_an_object_repr(picture, tmp_path):
    """PIL's "cannot identify image file <_io.BytesIO object at 0x...>" named an object of ours, not the
    image: an image is named by its path, else by its place in the list and its type."""
    from t2ireason.images import load_images, qwen_vl_utils_image

    garbage = tmp_path / "garbage.png"
    garbage.write_bytes(b"not a picture at all")
    out = load_images([picture, b"not an image", object(), garbage, {"bytes": b"GIF89a broken"}, None])
    said = [str(x) for x in out[1:]]
    assert all(" object at 0x" not in text for text in said), said
    assert said[0] == ("cannot read image #1 (bytes): PIL cannot identify an image format in its 12 bytes (they "
                       "begin b'not an image')")
    assert said[1] == "image #2 (object): unsupported image type object"
    assert said[2].startswith(f"cannot read image {garbage}: PIL cannot identify an image format")
    assert said[3].startswith("cannot read image #4 (dict): ")
    assert said[4] == "image #5 (NoneType): image is missing (None)"
    [failed] = load_images([Image.new("RGB", (2010, 10))], prepare=qwen_vl_utils_image)
    assert str(failed).startswith("cannot prepare image #0 (Image): ")
    with pytest.raises(ImageError, match=r"^cannot read image <bytes>: PIL cannot identify an image format"):
        as_image(b"\x00\x01")
    places = load_images([b"x", picture], places=[7, 9])  # named by their place in the caller's own list
    assert str(places[0]).startswith("cannot read image #7 (bytes)")


def test_torch_tensors_are_images_as_numpy_arrays_are():
    """A CxHxW (or HxWxC) tensor in [0, 1] or uint8 is the picture of the same HxWxC array; a batch is
    refused by as_image and split by image_batch, converted on its device, an image out of range failing alone."""
    import torch

    from t2ireason.images import image_batch

    pixels = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    digest = as_image(pixels).digest
    chw = torch.from_numpy(pixels).permute(2, 0, 1)
    assert as_image(chw).digest == digest
    assert as_image(chw.float() / 255).digest == digest
    assert as_image(chw.to(torch.bfloat16) / 255).size == (7, 5)  # bfloat16 (no numpy type) read through float32
    assert as_image(torch.from_numpy(pixels)).digest == digest  # HxWxC
    with pytest.raises(ImageError, match="is a batch"):
        as_image(chw[None])
    batch = torch.stack([chw, chw.flip(1)]).float() / 127.5 - 1
    batch[1, 0, 0, 0] = float("nan")
    first, second = image_batch(batch, value_range=(-1, 1))
    assert as_image(first).digest == digest
    assert isinstance(second, ImageError) and "image 1: float values must lie in [-1, 1] (value_range); got NaN" in str(second)
    with pytest.raises(ImageError, match="image 1"):
        as_image(second)  # the error in its place is raised where the image is read: it fails alone
    arrays = image_batch(np.stack([pixels, pixels]).astype(np.float32) / 255)  # numpy: B x H x W x C
    assert [as_image(a).digest for a in arrays] == [digest, digest]
    assert image_batch([chw, "a.png"])[1] == "a.png"  # a list keeps what is not an array
    with pytest.raises(ValueError, match="high > low"):
        image_batch(batch, value_range=(1, 1))


def test_image_batch_maps_every_array_in_a_list_from_value_range_and_leaves_a_batch_in_it_to_be_refused():
    """A list's HxW arrays and tensors are mapped from ``value_range`` as its HxWxC ones are (a grayscale
    float array was read as [0, 1], a different picture); a batch inside a list is refused where it is read,
    as a batch; a batch of no image is an empty list."""
    import torch

    from t2ireason.images import image_batch

    gray = np.full((4, 5), 0.5, dtype=np.float32)  # 0.5 in [-1, 1]: three quarters of white
    expected = as_image(np.full((4, 5), 191, dtype=np.uint8)).digest
    for given in (gray, torch.from_numpy(gray)):
        (converted,) = image_batch([given], value_range=(-1, 1))
        assert as_image(converted).digest == expected
    (kept,) = image_batch([torch.rand(2, 3, 8, 8)])
    with pytest.raises(ImageError, match="is a batch"):
        as_image(kept)
    assert image_batch(torch.rand(0, 3, 8, 8)) == [] and image_batch(np.zeros((0, 8, 8, 3), np.float32)) == []
