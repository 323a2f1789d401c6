"""The clip_score Space: CLIPScore of one image for its prompt, under either definition."""

from pathlib import Path

import gradio as gr

from t2ireason.alignment import DEFAULT_CLIP_MODEL
from t2ireason.spaces import ModuleLoader, card_article, shows_errors

HERE = Path(__file__).resolve().parent
load = ModuleLoader(HERE / "clip_score.py")  # the Space's own module file; each CLIP model loaded once


@shows_errors  # a judge or input error's own text on the page, not a bare "Error"
def score(image, prompt, model, definition):
    if not image or not prompt.strip():
        raise gr.Error("Give an image and its prompt.")
    return load(model=model.strip()).compute(predictions=[image], references=[prompt], definition=definition)


with gr.Blocks(title="CLIPScore") as demo:
    with gr.Row():
        image = gr.Image(type="filepath", label="Generated image")
        with gr.Column():
            prompt = gr.Textbox(label="Prompt")
            model = gr.Textbox(DEFAULT_CLIP_MODEL, label="CLIP model", info="a Hub id or a local folder")
            definition = gr.Radio(["hessel", "torchmetrics"], value="hessel", label="Definition")
            button = gr.Button("Score", variant="primary")
    result = gr.JSON(label="Result")
    button.click(score, [image, prompt, model, definition], result, api_name="score")
    gr.Markdown(card_article(HERE))

if __name__ == "__main__":
    demo.launch()
