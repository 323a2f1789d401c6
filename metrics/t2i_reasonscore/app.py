"""The t2i_reasonscore Space: score one generated image against its t2i-reasonbench row with a judge of your choice."""

from pathlib import Path

from t2ireason.spaces import judged_metric_app

HERE = Path(__file__).resolve().parent
demo = judged_metric_app(HERE / "t2i_reasonscore.py", "t2i-reasonbench", title="T2I-ReasonScore")

if __name__ == "__main__":
    demo.launch()
