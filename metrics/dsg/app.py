"""The dsg Space: the DSG score of one image for its prompt, with a judge (and question LLM) of your choice."""

from pathlib import Path

from t2ireason.baselines.dsg import PRESETS
from t2ireason.spaces import prompt_metric_app

HERE = Path(__file__).resolve().parent
demo = prompt_metric_app(HERE / "dsg.py", PRESETS, title="DSG", question_llm=True)

if __name__ == "__main__":
    demo.launch()
