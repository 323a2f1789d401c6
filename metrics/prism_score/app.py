"""The prism_score Space: score one generated image against its prism-bench row with a judge of your choice."""

from pathlib import Path

from t2ireason.spaces import judged_metric_app

HERE = Path(__file__).resolve().parent
demo = judged_metric_app(HERE / "prism_score.py", "prism-bench", title="PRISM Score")

if __name__ == "__main__":
    demo.launch()
