"""The clip_score Space: CLIPScore of one image for its prompt, under either definition."""

from pathlib import Path

import evaluate
import gradio as gr
from evaluate.utils.gradio import parse_readme

HERE = Path(__file__).parent
_modules = {}  # model id -> module: each CLIP model is loaded once


def score(image, prompt, model, definition):
    if image is None or not prompt.strip():
        raise gr.Error("Give an image and its prompt.")
    if model not in _modules:
        _modules[model] = evaluate.load(str(HERE / "clip_score.py"), model=model.strip())
    return _modules[model].compute(predictions=[image], references=[prompt], definition=definition)


with gr.Blocks(title="CLIPScore") as demo:
    with gr.Row():
        image = gr.Image(type="pil", label="Generated image")
        with gr.Column():
            prompt = gr.Textbox(label="Prompt")
            model = gr.Textbox(label="CLIP model", value="openai/clip-vit-base-patch32")
            definition = gr.Radio(["hessel", "torchmetrics"], value="hessel", label="Definition")
            button = gr.Button("Score")
    result = gr.JSON(label="Result")
    button.click(score, [image, prompt, model, definition], result)
    gr.Markdown(parse_readme(HERE / "README.md"))

if __name__ == "__main__":
    demo.launch()
