"""The meta_evaluation Space: agreement of metric scores with human ratings, human A/B/tie choices, or another judge."""

from pathlib import Path

import gradio as gr

from t2ireason.spaces import ModuleLoader, card_article, parse_json, shows_errors

HERE = Path(__file__).resolve().parent
load = ModuleLoader(HERE / "meta_evaluation.py")  # the Space's own module file, one per configuration
EXAMPLES = {
    "human": ("[0.1, 0.4, 0.35, 0.8]", "[1, 2, 3, 4]"),
    "preference": ("[[0.9, 0.2], [0.5, 0.5], [0.3, 0.7], [0.6, 0.1]]", '["A", "tie", "A", "B"]'),
    "judges": ("[8, 6, 9, 3, 5, 2]", "[7, 7, 9, 8, 4, 1]"),
}


@shows_errors  # an input error's own text on the page, not a bare "Error"
def compute(config, predictions, references, groups):
    inputs = {"predictions": parse_json(predictions, "predictions"), "references": parse_json(references, "references")}
    if groups.strip():
        inputs["groups"] = parse_json(groups, "groups")
    return load(config_name=config).compute(**inputs)


with gr.Blocks(title="Meta-evaluation") as demo:
    config = gr.Radio(list(EXAMPLES), value="human", label="Configuration")
    predictions = gr.Textbox(EXAMPLES["human"][0], label="predictions (JSON list)")
    references = gr.Textbox(EXAMPLES["human"][1], label="references (JSON list)")
    groups = gr.Textbox(label="groups (optional JSON list)")
    config.change(lambda c: EXAMPLES[c], config, [predictions, references], api_visibility="private")
    button = gr.Button("Compute", variant="primary")
    result = gr.JSON(label="Result")
    button.click(compute, [config, predictions, references, groups], result, api_name="compute")
    gr.Markdown(card_article(HERE))

if __name__ == "__main__":
    demo.launch()
