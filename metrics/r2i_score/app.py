"""The r2i_score Space: score one generated image against its r2i-bench row with a judge of your choice."""

from pathlib import Path

from t2ireason.spaces import judged_metric_app

HERE = Path(__file__).resolve().parent
demo = judged_metric_app(HERE / "r2i_score.py", "r2i-bench", title="R2I-Score")

if __name__ == "__main__":
    demo.launch()
