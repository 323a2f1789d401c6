"""The meta_evaluation Space: agreement of metric scores with human ratings, human A/B/tie choices, or another judge."""

import json
from pathlib import Path

import evaluate
import gradio as gr
from evaluate.utils.gradio import parse_readme

HERE = Path(__file__).parent
EXAMPLES = {
    "human": ("[0.1, 0.4, 0.35, 0.8]", "[1, 2, 3, 4]"),
    "preference": ("[[0.9, 0.2], [0.5, 0.5], [0.3, 0.7], [0.6, 0.1]]", '["A", "tie", "A", "B"]'),
    "judges": ("[8, 6, 9, 3, 5, 2]", "[7, 7, 9, 8, 4, 1]"),
}


def compute(config, predictions, references, groups):
    try:
        inputs = {"predictions": json.loads(predictions), "references": json.loads(references)}
        if groups.strip():
            inputs["groups"] = json.loads(groups)
    except json.JSONDecodeError as e:
        raise gr.Error(f"Inputs must be JSON lists: {e}") from None
    return evaluate.load(str(HERE / "meta_evaluation.py"), config).compute(**inputs)


with gr.Blocks(title="Meta-evaluation") as demo:
    config = gr.Radio(list(EXAMPLES), value="human", label="Configuration")
    predictions = gr.Textbox(label="predictions (JSON list)", value=EXAMPLES["human"][0])
    references = gr.Textbox(label="references (JSON list)", value=EXAMPLES["human"][1])
    groups = gr.Textbox(label="groups (optional JSON list)")
    config.change(lambda c: EXAMPLES[c], config, [predictions, references])
    button = gr.Button("Compute")
    result = gr.JSON(label="Result")
    button.click(compute, [config, predictions, references, groups], result)
    gr.Markdown(parse_readme(HERE / "README.md"))

if __name__ == "__main__":
    demo.launch()
