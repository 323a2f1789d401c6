"""The viescore Space: VIEScore of one image for its prompt, with a judge of your choice."""

from pathlib import Path

from t2ireason.baselines.viescore import PRESETS
from t2ireason.spaces import prompt_metric_app

HERE = Path(__file__).resolve().parent
demo = prompt_metric_app(HERE / "viescore.py", PRESETS, title="VIEScore")

if __name__ == "__main__":
    demo.launch()
