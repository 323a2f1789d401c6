"""The vqascore Space: VQAScore of one image for its prompt, with a judge of your choice."""

from pathlib import Path

import evaluate
import gradio as gr
from evaluate.utils.gradio import parse_readme

HERE = Path(__file__).parent
_modules = {}  # judge spec -> module: each judge is loaded once


def score(image, prompt, judge):
    if image is None or not prompt.strip():
        raise gr.Error("Give an image and its prompt.")
    if judge not in _modules:
        _modules[judge] = evaluate.load(str(HERE / "vqascore.py"), judge=judge.strip(), cache=False)
    return _modules[judge].compute(predictions=[image], references=[prompt])


with gr.Blocks(title="VQAScore") as demo:
    with gr.Row():
        image = gr.Image(type="pil", label="Generated image")
        with gr.Column():
            prompt = gr.Textbox(label="Prompt")
            judge = gr.Textbox(label="Judge", value="hf:llava-hf/llava-v1.6-34b-hf",
                               info="hf:<model>, vllm:<model> or openai:<model>@<url> (keys from the Space's secrets)")
            button = gr.Button("Score")
    result = gr.JSON(label="Result")
    button.click(score, [image, prompt, judge], result)
    gr.Markdown(parse_readme(HERE / "README.md"))

if __name__ == "__main__":
    demo.launch()
