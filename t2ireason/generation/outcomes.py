"""What the driver makes of each image a backend hands back, before anything is written or recorded.

- :func:`checked`: an image that cannot be kept as it is becomes that image's failure, naming the image and the
  generator (an empty 0x0 image; numbers rather than pixels, mode ``F`` or ``I``; more pixels than PIL reads back,
  twice ``PIL.Image.MAX_IMAGE_PIXELS``), or is converted (CMYK, YCbCr, LAB, HSV to RGB) and noted; an image of
  another size than the one asked for, or over ``MAX_IMAGE_PIXELS`` (kept: it was paid for), is noted in its
  ``extra``, which ``metadata.parquet`` holds;
- :class:`FirstFailures`: while nothing has been made or refused, failures are held back; once
  :data:`FIRST_FAILURES` images (or every image of a smaller run) have failed and none was made, the run stops
  with one :class:`GeneratorError` naming the failure, and none of them is recorded, so the same command, with the
  setting or the generator fixed, asks for them again (a setting the API refuses on every request, a generator
  that returns no image, are not paid for image after image, nor kept as each image's permanent failure).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .base import Drawn
from .spec import GeneratorError

if TYPE_CHECKING:
    from .jobs import GenerationConfig, Job

__all__ = ["checked", "noted", "describe_notes", "FirstFailures", "FIRST_FAILURES", "NOTES"]

#: the first images of a run that may all fail, none made or refused, before the run stops
FIRST_FAILURES = 5
#: what PNG holds (PIL's PNG writer); other modes are converted to RGB(A) where that means the same picture
_PNG_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "I;16", "I;16B"})
#: modes holding numbers rather than pixels: no conversion says what they mean as a picture
_NUMBER_MODES = frozenset({"F", "I"})


def checked(drawn: Drawn, job: Job, config: GenerationConfig, who: str) -> Drawn:
    """``drawn`` as it can be kept: its image checked (see the module's description), else its failure."""
    from PIL import Image

    image = drawn.image
    if image is None:
        return drawn
    extra = dict(drawn.extra)
    width, height = image.size
    where = f"{who} returned for {job.file}"
    if not width or not height:
        return Drawn.failed(f"{where} an empty image ({width}x{height}); return one image with pixels per prompt",
                            "error", True, extra)
    limit = Image.MAX_IMAGE_PIXELS
    pixels = width * height
    if limit and pixels > 2 * limit:  # PIL refuses to open it again: it could never be read back
        return Drawn.failed(f"{where} a {width}x{height} image, {pixels / 1e6:.1f} megapixels: more than PIL reads "
                            f"(twice PIL.Image.MAX_IMAGE_PIXELS, {2 * limit / 1e6:.1f}); not kept, and not asked for "
                            "again: ask for a smaller size", "error", False, extra)
    if limit and pixels > limit:
        extra["over_pixel_limit"] = (f"{pixels / 1e6:.1f} megapixels, over PIL.Image.MAX_IMAGE_PIXELS "
                                     f"({limit / 1e6:.1f}): a judge refuses to read it unless that limit is raised")
    if image.mode not in _PNG_MODES:
        if image.mode in _NUMBER_MODES or image.mode.startswith("I;"):
            return Drawn.failed(f"{where} an image of mode {image.mode} (numbers, not pixels), which a PNG cannot "
                                "hold: return 8-bit images (RGB, RGBA or L)", "error", True, extra)
        try:
            image = image.convert("RGBA" if "A" in image.mode.upper() else "RGB")
        except (ValueError, OSError) as e:
            return Drawn.failed(f"{where} an image of mode {drawn.image.mode}, which a PNG cannot hold nor RGB "
                                f"express ({e}): return RGB images", "error", True, extra)
        extra["converted_from"] = drawn.image.mode
    if config.height is not None and config.width is not None and (width, height) != (config.width, config.height):
        extra["size"], extra["size_asked"] = f"{width}x{height}", f"{config.width}x{config.height}"
    return Drawn(image, extra=extra)


class FirstFailures:
    """The failures of a run while nothing has been made or refused: held back (``hold``), recorded through
    ``record(job, drawn)`` as soon as an image is made or refused (``settle``) or the run ends otherwise
    (``release``), and never if they reach :data:`FIRST_FAILURES` (or all of a smaller run): then ``hold``
    raises the :class:`GeneratorError` that stops the run."""

    def __init__(self, todo: int, record: Callable[[Job, Drawn], None], who: str, limit: int = FIRST_FAILURES):
        self.limit = max(1, min(limit, todo))
        self.record, self.who = record, who
        self.held: list[tuple[Job, Drawn]] = []
        self.settled = False

    def hold(self, job: Job, drawn: Drawn) -> bool:
        """True when ``drawn`` (a failure) is held back rather than to be recorded now."""
        if self.settled or drawn.kind == "refused":
            return False
        self.held.append((job, drawn))
        if len(self.held) >= self.limit:
            n, self.held = len(self.held), []
            first = "the only image to draw" if n == 1 and self.limit == 1 else f"the first {n} images"
            raise GeneratorError(f"{first} failed and none was made, so nothing more is asked of {self.who}: "
                                 f"{drawn.failure} (for {job.file}). Fix what it says (a setting the model refuses, "
                                 "a generator that returns no image...) and run again: nothing was recorded, and "
                                 "the same folder takes the fixed settings")
        return True

    def settle(self) -> None:
        """Something was made or refused: the failures held back are each image's own."""
        self.settled = True
        self.release()

    def release(self) -> None:
        held, self.held = self.held, []
        for job, drawn in held:
            self.record(job, drawn)

    def __len__(self) -> int:
        return len(self.held)


#: the keys of an image's ``extra`` that :func:`checked` notes
NOTES = ("size_asked", "over_pixel_limit", "converted_from")


def noted(extra: dict[str, Any]) -> bool:
    """Whether :func:`checked` noted something of this image."""
    return any(key in extra for key in NOTES)


def describe_notes(extras: list[dict[str, Any]]) -> str | None:
    """One line about the images kept with a note (another size than asked, over the pixel limit,
    converted), or None."""
    sized = [e for e in extras if "size_asked" in e]
    large = sum("over_pixel_limit" in e for e in extras)
    converted = sum("converted_from" in e for e in extras)
    said = []
    if sized:
        said.append(f"{len(sized)} not of the size asked (e.g. {sized[0]['size']} for {sized[0]['size_asked']})")
    if large:
        said.append(f"{large} over PIL.Image.MAX_IMAGE_PIXELS (judges refuse to read them)")
    if converted:
        said.append(f"{converted} converted to RGB(A)")
    return "; ".join(said) or None
