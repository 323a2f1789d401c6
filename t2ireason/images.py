"""Images as judges see them: loaded once, hashed once, resized and encoded once.

A benchmark asks several questions about one image. Each question becomes a
request, and every request holds the same :class:`JudgeImage` object, so the
content digest, the size policy and the base64 encoding are computed once per
image and reused, not once per question.

Images reach a judge as they are: an image read from a file (or from encoded
bytes) keeps those bytes and is sent as them, with their own media type (a PNG
stays a PNG, bit for bit); an image made in memory is encoded losslessly (PNG, at zlib's fastest level:
a reward's images are new at every step, and their encoding is on the judge's path).
Re-encoding (JPEG...) or resizing happens only when a caller asks for it.

An official preset that must feed a judge what the authors' scripts fed it prepares the images
the same way: :func:`qwen_vl_utils_image` is what ``qwen_vl_utils``' ``fetch_image`` makes of an
image (RGBA composited on white, sides rounded to multiples of 28 by :func:`smart_resize`), given
to :func:`load_images` as ``prepare``; :meth:`JudgeImage.pil_reencoded` is the bytes a script gets
by opening the file with PIL and saving it again in its own format.

Images as a training loop holds them, torch tensors (``C x H x W``, on any device) and batches of them
(``B x C x H x W``, or numpy's ``B x H x W x C``), are turned into pixels once: :func:`image_batch`
converts a batch at once on its own device (scaled from the caller's value range, quantised to 8 bits,
one copy to the host), and :func:`as_image` takes a single tensor. An image made from pixels is kept in
memory: encoded (PNG) only for a judge that needs bytes, an HTTP one.
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
import os
import re
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

__all__ = ["JudgeImage", "as_image", "as_images", "ImageError", "ImageTooLarge", "decode_image", "load_images", "missing_files", "image_batch",
           "MEDIA_TYPES", "smart_resize", "on_white", "qwen_vl_utils_image"]

#: PIL format name -> media type, for the formats judges take
MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}
_OPENING = threading.Lock()
#: an object's default repr in a library's message (``<_io.BytesIO object at 0x7f...>``): never shown
_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")
_PNG_END = b"IEND\xaeB`\x82"  # the IEND chunk's type and CRC: the last 8 bytes of every complete PNG


class ImageError(ValueError):
    """An input could not be read as an image; the message says which input and why."""


class ImageTooLarge(ImageError):
    """An image has more pixels than PIL reads (a decompression bomb, or a very large image)."""


class JudgeImage:
    """An RGB image with a stable content digest and memoised derived forms.

    Build it with :func:`as_image`, which accepts PIL images, paths, bytes,
    numpy arrays and ``datasets`` image dicts.
    """

    __slots__ = ("image", "source", "data", "format", "__dict__")

    def __init__(self, image: Image.Image, source: str | None = None, *, data: bytes | None = None,
                 format: str | None = None):
        if image.mode != "RGB":
            image = image.convert("RGB")
        self.image = image
        self.source = source  # where it came from, for error messages and reports
        #: the encoded bytes the image was read from (a file's own bytes), sent as they are
        self.data = data if format in MEDIA_TYPES else None
        self.format = format if self.data is not None else None
        self._resized: dict[int | None, Image.Image] = {}
        self._encoded: dict[tuple, tuple[str, bytes]] = {}
        self._urls: dict[tuple, str] = {}
        self._url_bytes: dict[tuple, bytes] = {}

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the decoded pixels and size: the same picture gives the same key
        whatever file format or path it came from."""
        h = hashlib.sha256()
        h.update(f"{self.image.width}x{self.image.height}:".encode())
        h.update(self.image.tobytes())
        return h.hexdigest()

    @property
    def size(self) -> tuple[int, int]:
        return self.image.size

    def resized(self, max_pixels: int | None = None, min_pixels: int | None = None) -> Image.Image:
        """The image scaled (keeping its aspect) so that its area lies within the
        judge's pixel budget. Memoised per policy."""
        key = (max_pixels, min_pixels)
        if key not in self._resized:
            w, h = self.image.size
            area = w * h
            scale = 1.0
            if max_pixels and area > max_pixels:
                scale = math.sqrt(max_pixels / area)
            elif min_pixels and area < min_pixels:
                scale = math.sqrt(min_pixels / area)
            img = self.image
            if scale != 1.0:
                size = (max(1, int(w * scale)), max(1, int(h * scale)))
                img = img.resize(size, Image.Resampling.BICUBIC)
            self._resized[key] = img
        return self._resized[key]

    def encoded(self, fmt: str | None = None, max_pixels: int | None = None, quality: int = 95) -> tuple[str, bytes]:
        """``(media type, bytes)`` of the image as a judge receives it. Memoised.

        ``fmt=None`` (the default) sends the image as it is: the bytes it was read from, unchanged,
        when it came from a file or encoded bytes and needs no resizing; otherwise a lossless PNG.
        ``fmt="JPEG"`` (lossy, at ``quality``), ``"PNG"`` or ``"WEBP"`` (lossless) re-encode on request.
        """
        fmt = None if fmt is None else {"JPG": "JPEG"}.get(fmt.upper(), fmt.upper())
        if fmt is not None and fmt not in MEDIA_TYPES:
            raise ValueError(f"image format must be one of {', '.join(MEDIA_TYPES)} or None (as is), got {fmt!r}")
        img = self.resized(max_pixels)
        if self.data is not None and img is self.image and fmt in (None, self.format):
            return MEDIA_TYPES[self.format], self.data
        fmt = fmt or "PNG"
        key = (fmt, max_pixels, quality if fmt == "JPEG" else None)
        if key not in self._encoded:
            buf = io.BytesIO()
            if fmt == "JPEG":
                img.save(buf, format="JPEG", quality=quality)
            elif fmt == "WEBP":
                img.save(buf, format="WEBP", lossless=True)
            elif fmt == "PNG":  # zlib's fastest level: 3 to 7 times less time than PIL's 6, a sixth more bytes
                img.save(buf, format="PNG", compress_level=1)
            else:
                img.save(buf, format=fmt)
            self._encoded[key] = (MEDIA_TYPES[fmt], buf.getvalue())
        return self._encoded[key]

    def data_url(self, fmt: str | None = None, max_pixels: int | None = None, quality: int = 95) -> str:
        """A ``data:<media type>;base64,`` URL of :meth:`encoded` for OpenAI-compatible APIs. Memoised."""
        key = (fmt and fmt.upper(), max_pixels, quality)
        if key not in self._urls:
            mime, data = self.encoded(fmt, max_pixels, quality)
            self._urls[key] = f"data:{mime};base64," + base64.b64encode(data).decode()
        return self._urls[key]

    def data_url_bytes(self, fmt: str | None = None, max_pixels: int | None = None, quality: int = 95, *,
                       compute: bool = True) -> bytes | None:
        """:meth:`data_url` as ASCII bytes, ready to be spliced into a JSON request body as they are
        (a data URL holds no character JSON escapes). Memoised; with ``compute=False``, ``None``
        unless already computed (a caller can then compute it away from a busy thread)."""
        key = (fmt and fmt.upper(), max_pixels, quality)
        url = self._url_bytes.get(key)
        if url is None and compute:
            mime, data = self.encoded(fmt, max_pixels, quality)
            url = self._url_bytes[key] = b"data:" + mime.encode() + b";base64," + base64.b64encode(data)
        return url

    def pil_reencoded(self) -> JudgeImage:
        """The image as a script gets it by opening its file with PIL and saving it again in the
        file's own format with PIL's defaults (``Image.open(path).save(buf, format=image.format or
        "PNG")``, as PRISM-Bench's ``eval_gpt41.py`` encodes what it sends): other bytes than the
        file's (PIL's own compression, the chunks it keeps), the same picture for a PNG, a JPEG
        saved again at PIL's default quality. An image made in memory has no file: its PNG, which
        is what such a script writes for an image without a format. Memoised."""
        if self.data is None:
            return self
        if "_pil_reencoded" not in self.__dict__:
            original = Image.open(io.BytesIO(self.data))
            buf = io.BytesIO()
            original.save(buf, format=original.format or "PNG")
            self.__dict__["_pil_reencoded"] = _decode(buf.getvalue(), self.source or "<bytes>", self.source)
        return self.__dict__["_pil_reencoded"]

    def __repr__(self) -> str:
        src = f" from {self.source}" if self.source else ""
        return f"JudgeImage({self.image.width}x{self.image.height}{src}, {self.digest[:12]})"

    # JudgeImages are compared by content, so requests that carry equal images are equal.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, JudgeImage) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)


def _read(path: Path, prepare: Prepare | None = None) -> JudgeImage:
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise ImageError(f"image file not found: {path}") from e
    except OSError as e:  # a folder, no permission...
        raise ImageError(f"cannot read image {path}: {e}") from e
    return _decode(data, str(path), str(path), prepare)


def _decode(data: bytes, where: str, source: str | None, prepare: Prepare | None = None) -> JudgeImage:
    """The image encoded in ``data`` as a :class:`JudgeImage`, checked by :func:`decode_image` (a
    decompression bomb refused: more pixels than PIL's ``MAX_IMAGE_PIXELS``)."""
    img = decode_image(data, where)
    if prepare is not None:  # other pixels than the file's: the file's bytes are no longer the image
        return JudgeImage(_prepared(prepare, img, where), source)
    return JudgeImage(img, source, data=data, format=img.format)


def decode_image(data: bytes, where: str, *, large: bool = False) -> Image.Image:
    """The image encoded in ``data``, fully decoded and checked: an empty, truncated or unreadable
    file is an :class:`ImageError` naming ``where`` (never PIL's ``<_io.BytesIO ...>``), and so is a
    decompression bomb, an :class:`ImageTooLarge`: more pixels than PIL's ``MAX_IMAGE_PIXELS`` (what a
    judge reads), or with ``large`` more than twice that (PIL's own hard limit: a generation keeps an
    image it paid for up to there, and says so)."""
    if not data:
        raise ImageError(f"cannot read image {where}: it is empty (0 bytes)")
    try:
        # PIL checks the size on opening (its header), and warns; catch_warnings changes the process's
        # filters, so threads decoding at once (load_images) take turns for it, and decode in parallel
        with _OPENING, warnings.catch_warnings():
            warnings.simplefilter("ignore" if large else "error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            fmt = img.format
        img.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise ImageTooLarge(f"refusing image {where}: {_OBJECT_REPR.sub('the data', str(e))}") from None
    except UnidentifiedImageError:  # PIL's message names its BytesIO object, not the image
        raise ImageError(f"cannot read image {where}: PIL cannot identify an image format in its {len(data)} "
                         f"bytes (they begin {data[:12]!r})") from None
    except Exception as e:  # PIL raises several types for unreadable data
        raise ImageError(f"cannot read image {where}: {_OBJECT_REPR.sub('the data', str(e))}") from e
    # PIL decodes a PNG whose end is cut off after the last pixel row without a word: a file
    # still being written, or a copy that stopped short. Whole PNGs end with the IEND chunk.
    if fmt == "PNG" and not data.rstrip(b"\0").endswith(_PNG_END):
        raise ImageError(f"cannot read image {where}: the PNG is incomplete (no IEND chunk at its end)")
    img.format = fmt
    return img


def _prepared(prepare: Prepare, image: Image.Image, where: str) -> Image.Image:
    try:
        return prepare(image)
    except ValueError as e:  # smart_resize's aspect-ratio limit...
        raise ImageError(f"cannot prepare image {where}: {e}") from None


def as_image(x: Any, *, base_dir: str | os.PathLike | None = None, prepare: Prepare | None = None,
             name: str | None = None) -> JudgeImage:
    """Turn any common image form into a :class:`JudgeImage`.

    Accepts a ``JudgeImage``, a PIL image, a path (``str``/``Path``, relative
    paths resolved against ``base_dir``), raw encoded bytes, a numpy array
    (HxW, HxWx3 or HxWx4; uint8 or floats in [0, 1]), a torch tensor (CxHxW as torchvision and
    diffusers give them, or HxWxC, or HxW; uint8 or floats in [0, 1]; on any device: copied to the
    host) and the dicts that ``datasets.Image(decode=False)`` yields (``{"bytes": ..., "path": ...}``).
    An :class:`ImageError` given (what :func:`image_batch` puts in place of an image it cannot
    convert) is raised, so that image fails alone wherever images are loaded.

    ``prepare`` turns the decoded image (in its own mode: RGBA keeps its alpha) into the picture the
    judge gets, e.g. :func:`qwen_vl_utils_image`; one it cannot prepare is an :class:`ImageError`.
    (A ``JudgeImage`` given is already RGB.) ``name`` is what messages call an image without a path
    (:func:`load_images`: its place and type, ``#3 (bytes)``).
    """
    if isinstance(x, JudgeImage):
        return x if prepare is None else JudgeImage(_prepared(prepare, x.image, x.source or name or "<image>"),
                                                    x.source)
    if isinstance(x, ImageError):
        raise x
    if _is_tensor(x):
        return as_image(_tensor_pixels(x), prepare=prepare, name=name)
    if isinstance(x, Image.Image):
        source = getattr(x, "filename", None) or None
        return JudgeImage(x if prepare is None else _prepared(prepare, x, source or name or "<image>"), source)
    if isinstance(x, (str, os.PathLike)):
        path = Path(x)
        if base_dir is not None and not path.is_absolute():
            path = Path(base_dir) / path
        return _read(path, prepare)
    if isinstance(x, (bytes, bytearray, memoryview)):
        return _decode(bytes(x), name or "<bytes>", None, prepare)
    if isinstance(x, dict):
        if x.get("bytes"):
            return _decode(bytes(x["bytes"]), x.get("path") or name or "<bytes>", x.get("path"), prepare)
        if x.get("path"):
            return as_image(x["path"], base_dir=base_dir, prepare=prepare)
        raise ImageError(f"image dict has neither 'bytes' nor 'path': keys {sorted(x)}")
    if type(x).__module__ == "numpy":
        import numpy as np

        arr = np.asarray(x)
        if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[-1] not in (1, 3, 4)) or arr.size == 0:
            raise ImageError(f"numpy image must be HxW or HxWxC with C in 1, 3, 4; got shape {arr.shape}")
        # out-of-range values would wrap or clip into a different picture without a word
        if arr.dtype.kind == "f":
            if not np.all((arr >= -1e-3) & (arr <= 1 + 1e-3)):  # rounding noise passes; NaN does not
                raise ImageError(f"float numpy image values must lie in [0, 1]; got [{arr.min()}, {arr.max()}] "
                                 "(divide 0-255 data by 255)")
            arr = (np.clip(arr, 0.0, 1.0) * 255).round()
        elif arr.dtype.kind in "iu" and (arr.min() < 0 or arr.max() > 255):
            raise ImageError(f"integer numpy image values must lie in [0, 255]; got [{arr.min()}, {arr.max()}]")
        elif arr.dtype.kind == "b":  # a mask: black and white
            arr = arr * 255
        elif arr.dtype.kind not in "iu":
            raise ImageError(f"numpy image dtype must be integer, bool or float; got {arr.dtype}")
        if arr.ndim == 3 and arr.shape[-1] == 1:
            arr = arr[..., 0]
        return as_image(Image.fromarray(arr.astype("uint8")), prepare=prepare, name=name)
    if x is None:
        raise ImageError("image is missing (None)")
    raise ImageError(f"unsupported image type {type(x).__name__}")


def missing_files(images: Any, *, base_dir: str | os.PathLike | None = None) -> list[tuple[int, str]]:
    """``(index, path)`` of each of ``images`` given by a file path (a ``str``/``Path``, or a
    ``datasets`` image dict with a path and no bytes) where no file is: a caller's mistake to say at
    once, before any image is judged, rather than one failed image each."""
    missing = []
    for i, x in enumerate(images):
        if isinstance(x, dict) and not x.get("bytes"):
            x = x.get("path")
        if isinstance(x, (str, os.PathLike)):
            path = Path(x)
            if base_dir is not None and not path.is_absolute():
                path = Path(base_dir) / path
            if not path.exists():
                missing.append((i, str(path)))
    return missing


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.split(".", 1)[0] == "torch" and hasattr(x, "detach")


def _tensor_pixels(x: Any) -> Any:
    """A torch image tensor as the numpy array :func:`as_image` reads: on the host, H x W x C (a C x H x W
    tensor, channels first as torchvision and diffusers give them, is transposed), float32 for a float
    tensor (bfloat16 has no numpy type)."""
    if x.ndim == 3 and x.shape[0] in (1, 3, 4) and x.shape[-1] not in (1, 3, 4):
        x = x.permute(1, 2, 0)
    elif x.ndim == 4:
        raise ImageError(f"a torch tensor of shape {tuple(x.shape)} is a batch: pass its images one by one "
                         "(iterate it), or the batch to a reward, which converts it at once")
    x = x.detach()
    if x.is_floating_point():
        x = x.float()
    return x.to("cpu").numpy()


def image_batch(images: Any, *, value_range: tuple[float, float] = (0.0, 1.0), out_of_range: str = "fail") -> list[Any]:
    """The images of ``images`` as a list, one item per image, ready for :func:`as_image`.

    A torch tensor ``B x C x H x W`` or a numpy array ``B x H x W x C`` (a batch as a pipeline gives
    it) is converted at once: floats mapped from ``value_range`` (``(0, 1)``, or ``(-1, 1)`` for a
    pipeline's raw decoder output) to 8-bit pixels on the tensor's own device, then copied to the
    host in one transfer; uint8 pixels are taken as they are. A sequence keeps its items, a tensor or
    an array among them converted the same way (a PIL image or a path stays as it is). An image
    whose values are NaN becomes an :class:`ImageError` naming it in the list, so it fails alone
    (:func:`load_images`); so does one whose values leave ``value_range``, or with ``out_of_range="raise"``
    (a reward: a wrong ``value_range``, a decoder's [-1, 1] output read as [0, 1], would score every image as
    a failure) the batch is refused with one :class:`ImageError` saying which range its values span. A batch
    of another shape or type, or of images without pixels (0 x 0), is an :class:`ImageError` at once."""
    if out_of_range not in ("fail", "raise"):
        raise ValueError(f"out_of_range must be 'fail' or 'raise', got {out_of_range!r}")
    lo, hi = (float(v) for v in value_range)
    if not hi > lo:
        raise ValueError(f"value_range must be (low, high) with high > low, got {value_range!r}")
    if _is_tensor(images) or type(images).__module__ == "numpy":
        if images.ndim != 4:
            raise ImageError(f"a batch of images is B x C x H x W (torch) or B x H x W x C (numpy); got shape "
                             f"{tuple(images.shape)}: pass a list for images of different sizes")
        out = _pixels(images, lo, hi, 0)
    elif isinstance(images, (str, os.PathLike, Image.Image, bytes)):
        raise ImageError(f"images must be a batch (a tensor, an array or a list), got one {type(images).__name__}")
    else:
        out = []
        for i, x in enumerate(images):  # one image an item: anything else is refused where it is read (as_image)
            if (_is_tensor(x) or type(x).__module__ == "numpy") and getattr(x, "ndim", 0) in (2, 3):
                out.extend(_pixels(x[None], lo, hi, i))
            else:
                out.append(x)
    outside = [(i, x.found) for i, x in enumerate(out) if isinstance(x, ImageError) and getattr(x, "found", None)]
    if outside and out_of_range == "raise":
        low, high = min(f[0] for _, f in outside), max(f[1] for _, f in outside)
        which = ", ".join(str(i) for i, _ in outside[:8]) + (" ..." if len(outside) > 8 else "")
        hint = ("a [-1, 1] range is a decoder's raw output: pass value_range=(-1, 1)" if low >= -1.001 and high <= 1.001
                else "8-bit values: pass a uint8 tensor, or divide by 255" if low >= -0.001 and high <= 255.5
                else "pass the range the images are in as value_range")
        raise ImageError(f"{len(outside)} of {len(out)} images have values outside value_range [{lo:g}, {hi:g}]: "
                         f"they span [{low:.4g}, {high:.4g}] (images {which}); {hint}")
    return out


def _pixels(batch: Any, lo: float, hi: float, first: int) -> list[Any]:
    """A 4-d tensor or array of images (3-d: of HxW ones) as HxWxC (HxW) uint8 numpy arrays, each image's values
    checked against ``[lo, hi]`` (an ImageError in its place when they leave it), the conversion done where the
    data is."""
    import numpy as np

    if not len(batch):
        return []
    if 0 in tuple(batch.shape[1:]):  # no pixel to read (its minimum and maximum do not exist)
        where = "the batch" if batch.ndim == 4 and first == 0 and len(batch) > 1 else f"image {first}"
        raise ImageError(f"{where} has no pixels (shape {tuple(batch.shape[1:])}): nothing to score")
    scale = 255.0 / (hi - lo)
    if _is_tensor(batch):
        import torch

        x = batch.detach()
        lows = highs = None
        channels_first = x.ndim == 4 and x.shape[1] in (1, 3, 4) and x.shape[-1] not in (1, 3, 4)
        if x.is_floating_point():
            flat = x.reshape(len(x), -1)
            lows, highs = flat.amin(1).float().cpu().tolist(), flat.amax(1).float().cpu().tolist()
            pixels = _quantized(x, lo, scale, channels_first)
        elif x.dtype == torch.uint8:
            pixels = (x.permute(0, 2, 3, 1) if channels_first else x).contiguous().to("cpu").numpy()
        else:
            raise ImageError(f"image tensors must be float or uint8, got {x.dtype}")
    else:
        arr = np.asarray(batch)
        if arr.ndim == 4 and arr.shape[1] in (1, 3, 4) and arr.shape[-1] not in (1, 3, 4):
            arr = arr.transpose(0, 2, 3, 1)  # channels last, as PIL takes them
        lows = highs = None
        if arr.dtype.kind == "f":
            flat = arr.reshape(len(arr), -1)
            lows, highs = flat.min(1).tolist(), flat.max(1).tolist()
            with np.errstate(invalid="ignore"):  # a NaN image is refused below; its pixels are never read
                arr = np.clip((arr.astype(np.float32) - lo) * scale, 0.0, 255.0).round().astype(np.uint8)
        elif arr.dtype != np.uint8:
            raise ImageError(f"image arrays in a batch must be float or uint8, got {arr.dtype}")
        pixels = arr
    tolerance = 1e-3 * (hi - lo)  # rounding noise passes; NaN does not
    bad = None if lows is None else [not (lo - tolerance <= a and b <= hi + tolerance) for a, b in zip(lows, highs)]
    out: list[Any] = []
    for k, image in enumerate(pixels):
        if bad is not None and bad[k]:
            finite = lows[k] == lows[k] and highs[k] == highs[k]
            shown = f"[{lows[k]:.4g}, {highs[k]:.4g}]" if finite else "NaN"
            error = ImageError(f"image {first + k}: float values must lie in [{lo:g}, {hi:g}] (value_range); "
                               f"got {shown}")
            error.found = (lows[k], highs[k]) if finite else None  # the range it spans, for a refusal of the batch
            out.append(error)
        else:
            out.append(image)
    return out


def _quantized(x: Any, lo: float, scale: float, channels_first: bool) -> Any:
    """Float pixels in ``[lo, lo + 255 / scale]`` of a batch as 8-bit ones, channels last, on the host
    (numpy): mapped to 0-255, rounded (half to even, as numpy rounds) and clamped where the data is, then
    copied to the host in one transfer. On the host a few images at a time, so that the passes over them
    stay in the processor's cache (a 64-image batch of 512 px holds 50M floats, and a fresh 200 MB buffer
    costs more to fault in than to compute)."""
    import torch

    shape = (x.shape[0], *x.shape[2:], x.shape[1]) if channels_first else tuple(x.shape)
    out = torch.empty(shape, dtype=torch.uint8, device=x.device)
    step = len(x) if x.device.type != "cpu" else max(1, (1 << 20) // max(1, x[0].numel()))
    for k in range(0, len(x), step):
        part = x[k:k + step].float()
        part = part.sub(lo).mul_(scale) if lo else part.mul(scale)
        part = part.round_().clamp_(0, 255).to(torch.uint8)
        out[k:k + step].copy_(part.permute(0, 2, 3, 1) if channels_first else part)
    return out.to("cpu").numpy()


def load_images(images: Any, *, base_dir: str | os.PathLike | None = None, prepare: Prepare | None = None,
                workers: int | None = None, places: Any = None) -> list[JudgeImage | ImageError]:
    """Each of ``images`` as a :class:`JudgeImage` (prepared by ``prepare``, see :func:`as_image`),
    or the :class:`ImageError` saying why it cannot be read: one unreadable image is that image's
    failure, not the batch's. The images are decoded and their digests taken by ``workers`` threads
    at once (default: one per CPU core, at most 8; PIL's decoders and SHA-256 release the GIL): a
    512-pixel PNG takes 7-12 ms to decode, which one thread would add to every pair a GPU judge scores.
    The list keeps the input order; an image without a path is named in its error by its place
    (in ``images``, or ``places[i]`` in the caller's own list) and type (``#3 (bytes)``), never by an
    object's repr."""
    images = list(images)
    places = list(range(len(images)) if places is None else places)

    def one(i: int, x: Any) -> JudgeImage | ImageError:
        named = isinstance(x, (str, os.PathLike)) or isinstance(x, dict) and x.get("path")
        name = None if named else f"#{places[i]} ({type(x).__name__})"
        try:
            image = as_image(x, base_dir=base_dir, prepare=prepare, name=name)
        except ImageError as e:
            return e if name is None or name in str(e) else ImageError(f"image {name}: {e}")
        image.digest  # noqa: B018 - taken here, in parallel, rather than by the cache's first look
        return image

    workers = min(len(images), workers or min(8, os.cpu_count() or 1))
    if workers <= 1 or all(isinstance(x, JudgeImage) for x in images):
        return [one(i, x) for i, x in enumerate(images)]
    with ThreadPoolExecutor(workers, thread_name_prefix="decode") as pool:
        return list(pool.map(one, range(len(images)), images))


def as_images(images: Any, **kwargs: Any) -> list[JudgeImage]:
    """:func:`load_images` for a caller that takes no unreadable image: the first one's
    :class:`ImageError` is raised."""
    loaded = load_images(images, **kwargs)
    for image in loaded:
        if isinstance(image, ImageError):
            raise image
    return loaded  # type: ignore[return-value]  # no ImageError is left


# -- what qwen_vl_utils makes of an image -------------------------------------------------------------
# The authors of T2I-ReasonBench and PRISM-Bench feed Qwen2.5-VL through ``process_vision_info`` of
# ``qwen_vl_utils`` (qwen-vl-utils in the Qwen2.5-VL repository, src/qwen_vl_utils/vision_process.py),
# whose ``fetch_image`` makes every image RGB (``to_rgb``: an RGBA image pasted on white through its
# alpha; any other mode converted by PIL, which drops alpha) and resizes it with PIL's default filter
# (bicubic) to :func:`smart_resize`'s size before the processor sees it. Written here from that
# behaviour; the project does not depend on qwen_vl_utils (which needs torchvision).

Prepare = Callable[[Image.Image], Image.Image]

#: qwen_vl_utils' constants for images: a side is a multiple of 28 (14-pixel patches merged 2x2), the
#: area within 4 and 16384 such tiles (its defaults: an image message with no min_pixels/max_pixels),
#: and no image more than 200 times as long as it is wide
QWEN_FACTOR = 28
QWEN_MIN_PIXELS = 4 * 28 * 28
QWEN_MAX_PIXELS = 16384 * 28 * 28
QWEN_MAX_RATIO = 200


def smart_resize(height: int, width: int, factor: int = QWEN_FACTOR, min_pixels: int = QWEN_MIN_PIXELS,
                 max_pixels: int = QWEN_MAX_PIXELS) -> tuple[int, int]:
    """``(height, width)`` as qwen_vl_utils' ``smart_resize`` computes them: each side rounded to the
    nearest multiple of ``factor`` (Python's ``round``: a half goes to the even multiple, 42 / 28 =
    1.5 -> 56, 70 / 28 = 2.5 -> 56) and at least ``factor``; if that area exceeds ``max_pixels``,
    both sides scaled by sqrt(area / max_pixels) and rounded DOWN to multiples of ``factor``; if it
    falls below ``min_pixels``, scaled up by sqrt(min_pixels / area) and rounded UP. (The scaled
    sides are not held at ``factor`` or more: an extreme aspect can give 0, as there.) An aspect
    ratio above 200 is a ValueError."""
    if max(height, width) / min(height, width) > QWEN_MAX_RATIO:
        raise ValueError(f"absolute aspect ratio must be smaller than {QWEN_MAX_RATIO}, "
                         f"got {max(height, width) / min(height, width)}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def on_white(image: Image.Image) -> Image.Image:
    """qwen_vl_utils' ``to_rgb``: an RGBA image pasted on a white RGB canvas through its alpha (a
    transparent pixel becomes white); an image of any other mode converted by PIL (LA, PA and a
    palette's transparency lose their alpha without compositing, as there)."""
    if image.mode == "RGBA":
        canvas = Image.new("RGB", image.size, (255, 255, 255))
        canvas.paste(image, mask=image.split()[3])
        return canvas
    return image.convert("RGB")


def qwen_vl_utils_image(image: Image.Image, *, min_pixels: int = QWEN_MIN_PIXELS,
                        max_pixels: int = QWEN_MAX_PIXELS) -> Image.Image:
    """What qwen_vl_utils' ``fetch_image`` hands the processor for ``image``: :func:`on_white`, then
    resized (PIL's default filter) to :func:`smart_resize`'s size within ``min_pixels`` and
    ``max_pixels`` (its defaults: a message that names neither, as the authors' scripts send)."""
    image = on_white(image)
    height, width = smart_resize(image.height, image.width, min_pixels=min_pixels, max_pixels=max_pixels)
    return image.resize((width, height))
