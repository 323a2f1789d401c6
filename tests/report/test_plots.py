"""Plots are real PNGs with the content asked for, and bad input is refused clearly."""

import pytest
from PIL import Image

from t2ireason.report import plots

TABLE = {"model-a": {"idiom": 40.0, "textual": 30.0, "entity": 55.0}, "model-b": {"idiom": 60.0, "textual": None, "entity": 65.0}}


@pytest.mark.parametrize("make", [
    lambda p: plots.dimension_bars(TABLE, p, errors={"model-a": {"idiom": (35.0, 45.0)}}),
    lambda p: plots.dimension_radar(TABLE, p),
    lambda p: plots.score_distribution({"a": [0.1, 0.5, None], "b": [0.9]}, p),
    lambda p: plots.mt2ie_iterations({"a": {0: {"score": 0.8, "difficulty": 1.0}, 1: {"score": 0.5, "difficulty": 2.0}}}, p),
])
def test_plots_write_images(tmp_path, make):
    path = make(tmp_path / "sub" / "plot.png")
    with Image.open(path) as img:
        assert img.format == "PNG" and img.width > 300 and img.height > 200
        # not a blank canvas: something was drawn
        assert len(img.convert("L").getcolors(maxcolors=1 << 16) or []) > 10


def test_plots_refuse_bad_input(tmp_path):
    with pytest.raises(ValueError, match="no models"):
        plots.dimension_bars({}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        plots.dimension_radar({"a": {"x": 1.0, "y": 2.0}}, tmp_path / "x.png")
