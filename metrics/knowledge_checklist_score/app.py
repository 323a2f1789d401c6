"""The knowledge_checklist_score Space: score one generated image against its worldgenbench row with a judge of your choice."""

from pathlib import Path

from t2ireason.spaces import judged_metric_app

HERE = Path(__file__).resolve().parent
demo = judged_metric_app(HERE / "knowledge_checklist_score.py", "worldgenbench", title="Knowledge Checklist Score")

if __name__ == "__main__":
    demo.launch()
