"""The tifa Space: the TIFA score of one image for its prompt, with a judge (and question LLM) of your choice."""

from pathlib import Path

from t2ireason.baselines.tifa import PRESETS
from t2ireason.spaces import prompt_metric_app

HERE = Path(__file__).resolve().parent
demo = prompt_metric_app(HERE / "tifa.py", PRESETS, title="TIFA", question_llm=True)

if __name__ == "__main__":
    demo.launch()
