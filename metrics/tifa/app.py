"""The tifa Space: the TIFA score of one image for its prompt, with a judge (and question LLM) of your choice."""

from pathlib import Path

import gradio as gr

from t2ireason.baselines.tifa import PRESETS
from t2ireason.spaces import ModuleLoader, card_article, shows_errors

HERE = Path(__file__).resolve().parent
load = ModuleLoader(HERE / "tifa.py")  # the Space's own module file; each judge loaded once


@shows_errors  # a judge or input error's own text on the page, not a bare "Error"
def score(image, prompt, judge, llm):
    if not image or not prompt.strip():
        raise gr.Error("Give an image and its prompt.")
    return load(judge=judge.strip(), llm=llm.strip() or None, cache=False, store=False).compute(
        predictions=[image], references=[prompt])


with gr.Blocks(title="TIFA") as demo:
    with gr.Row():
        image = gr.Image(type="filepath", label="Generated image")
        with gr.Column():
            prompt = gr.Textbox(label="Prompt")
            judge = gr.Textbox("openai:gpt-4o", label="Judge (answers the questions)",
                               info="hf:<model>, vllm:<model> or openai:<model>@<url> (keys from the Space's secrets)")
            llm = gr.Textbox(PRESETS["paper"]["llm"], label="LLM (writes the questions)", info="empty: the judge")
            button = gr.Button("Score", variant="primary")
    result = gr.JSON(label="Result")
    button.click(score, [image, prompt, judge, llm], result, api_name="score")
    gr.Markdown(card_article(HERE))

if __name__ == "__main__":
    demo.launch()
