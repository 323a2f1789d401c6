"""Images as judges see them: loaded once, hashed once, resized and encoded once.

A benchmark asks several questions about one image. Each question becomes a
request, and every request holds the same :class:`JudgeImage` object, so the
content digest, the size policy and the base64 encoding are computed once per
image and reused, not once per question.

Images reach a judge as they are: an image read from a file (or from encoded
bytes) keeps those bytes and is sent as them, with their own media type (a PNG
stays a PNG, bit for bit); an image made in memory is encoded losslessly (PNG).
Re-encoding (JPEG...) or resizing happens only when a caller asks for it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
import os
import warnings
from functools import cached_property
from pathlib import Path
from typing import Any

from PIL import Image

__all__ = ["JudgeImage", "as_image", "ImageError", "load_images", "MEDIA_TYPES"]

#: PIL format name -> media type, for the formats judges take
MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}
_PNG_END = b"IEND\xaeB`\x82"  # the IEND chunk's type and CRC: the last 8 bytes of every complete PNG


class ImageError(ValueError):
    """An input could not be read as an image; the message says which input and why."""


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

    def __repr__(self) -> str:
        src = f" from {self.source}" if self.source else ""
        return f"JudgeImage({self.image.width}x{self.image.height}{src}, {self.digest[:12]})"

    # JudgeImages are compared by content, so requests that carry equal images are equal.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, JudgeImage) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)


def _read(path: Path) -> JudgeImage:
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise ImageError(f"image file not found: {path}") from e
    except OSError as e:  # a folder, no permission...
        raise ImageError(f"cannot read image {path}: {e}") from e
    return _decode(data, str(path), str(path))


def _decode(data: bytes, where: str, source: str | None) -> JudgeImage:
    """The image encoded in ``data``, fully decoded and checked: an empty, truncated or
    unreadable file, or a decompression bomb (more pixels than PIL's ``MAX_IMAGE_PIXELS``),
    is an :class:`ImageError` naming ``where``."""
    if not data:
        raise ImageError(f"cannot read image {where}: it is empty (0 bytes)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            fmt = img.format
            img.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise ImageError(f"refusing image {where}: {e}") from None
    except Exception as e:  # PIL raises several types for unreadable data
        raise ImageError(f"cannot read image {where}: {e}") from e
    # PIL decodes a PNG whose end is cut off after the last pixel row without a word: a file
    # still being written, or a copy that stopped short. Whole PNGs end with the IEND chunk.
    if fmt == "PNG" and not data.rstrip(b"\0").endswith(_PNG_END):
        raise ImageError(f"cannot read image {where}: the PNG is incomplete (no IEND chunk at its end)")
    return JudgeImage(img, source, data=data, format=fmt)


def as_image(x: Any, *, base_dir: str | os.PathLike | None = None) -> JudgeImage:
    """Turn any common image form into a :class:`JudgeImage`.

    Accepts a ``JudgeImage``, a PIL image, a path (``str``/``Path``, relative
    paths resolved against ``base_dir``), raw encoded bytes, a numpy array
    (HxW, HxWx3 or HxWx4; uint8 or floats in [0, 1]) and the dicts that
    ``datasets.Image(decode=False)`` yields (``{"bytes": ..., "path": ...}``).
    """
    if isinstance(x, JudgeImage):
        return x
    if isinstance(x, Image.Image):
        return JudgeImage(x, getattr(x, "filename", None) or None)
    if isinstance(x, (str, os.PathLike)):
        path = Path(x)
        if base_dir is not None and not path.is_absolute():
            path = Path(base_dir) / path
        return _read(path)
    if isinstance(x, (bytes, bytearray, memoryview)):
        return _decode(bytes(x), "<bytes>", None)
    if isinstance(x, dict):
        if x.get("bytes"):
            return _decode(bytes(x["bytes"]), x.get("path") or "<bytes>", x.get("path"))
        if x.get("path"):
            return as_image(x["path"], base_dir=base_dir)
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
        return JudgeImage(Image.fromarray(arr.astype("uint8")))
    if x is None:
        raise ImageError("image is missing (None)")
    raise ImageError(f"unsupported image type {type(x).__name__}")


def load_images(images: Any, *, base_dir: str | os.PathLike | None = None) -> list[JudgeImage | ImageError]:
    """Each of ``images`` as a :class:`JudgeImage`, or the :class:`ImageError` saying why it
    cannot be read: one unreadable image is that image's failure, not the batch's."""
    out: list[JudgeImage | ImageError] = []
    for x in images:
        try:
            out.append(as_image(x, base_dir=base_dir))
        except ImageError as e:
            out.append(e)
    return out
