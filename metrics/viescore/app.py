"""The viescore Space: VIEScore of one image for its prompt, with a judge of your choice."""

from pathlib import Path

import gradio as gr

from t2ireason.baselines.viescore import PRESETS
from t2ireason.spaces import ModuleLoader, card_article, shows_errors

HERE = Path(__file__).resolve().parent
load = ModuleLoader(HERE / "viescore.py")  # the Space's own module file; each judge loaded once


@shows_errors  # a judge or input error's own text on the page, not a bare "Error"
def score(image, prompt, judge):
    if not image or not prompt.strip():
        raise gr.Error("Give an image and its prompt.")
    return load(judge=judge.strip(), cache=False).compute(predictions=[image], references=[prompt])


with gr.Blocks(title="VIEScore") as demo:
    with gr.Row():
        image = gr.Image(type="filepath", label="Generated image")
        with gr.Column():
            prompt = gr.Textbox(label="Prompt")
            judge = gr.Textbox(PRESETS["paper"]["judge"], label="Judge",
                               info="hf:<model>, vllm:<model> or openai:<model>@<url> (keys from the Space's secrets)")
            button = gr.Button("Score", variant="primary")
    result = gr.JSON(label="Result")
    button.click(score, [image, prompt, judge], result, api_name="score")
    gr.Markdown(card_article(HERE))

if __name__ == "__main__":
    demo.launch()
