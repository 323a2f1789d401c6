"""What the metric Spaces' ``app.py`` files share: loading the module from the Space's own
files, once per setting, and the Gradio app of a judged benchmark metric.

A Space (``metrics/publish_spaces.py``) holds the metric folder and this package beside it;
``app.py`` builds a Gradio app over the module and ``python app.py`` serves it (on Spaces,
``GRADIO_SERVER_NAME`` makes it listen on every interface). Gradio is the Space's SDK (the
``space`` extra to run an app elsewhere), imported only here, when an app is built. (evaluate
0.4.6's ``launch_gradio_widget`` builds on gradio 3's ``gr.inputs``, gone since gradio 4, so the
apps build their own Blocks.)
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["ModuleLoader", "card_article", "parse_json", "judged_metric_app", "prompt_metric_app", "shows_errors"]


def shows_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (an app's event handler) with every error the project raises on purpose (bad input,
    an unusable or unreachable judge, a missing key: :func:`t2ireason.console.user_error_text`) raised
    again as ``gr.Error`` with its text: Gradio shows only a ``gr.Error``'s message, anything
    else as a bare red "Error"."""
    @functools.wraps(fn)
    def handler(*args: Any, **kwargs: Any) -> Any:
        import gradio as gr

        from .console import user_error_text

        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except Exception as e:
            text = user_error_text(e)
            if text is None:
                raise
            raise gr.Error(text) from None

    return handler


class ModuleLoader:
    """``evaluate.load`` of the Space's own module file (never a Hub lookup by name), one module
    per distinct setting, kept for the next request: a judge or a model is loaded once."""

    def __init__(self, module_file: str | os.PathLike):
        self.path = Path(module_file).resolve()
        if not self.path.is_file():
            raise FileNotFoundError(f"the metric module {self.path} is missing from the Space")
        self._modules: dict[str, Any] = {}

    def __call__(self, **kwargs: Any):
        import evaluate

        key = json.dumps(kwargs, sort_keys=True, default=str)
        if key not in self._modules:
            self._modules[key] = evaluate.load(str(self.path), **kwargs)
        return self._modules[key]


def card_article(folder: str | os.PathLike) -> str:
    """The metric card without its front matter, shown under the app."""
    from evaluate.utils.gradio import parse_readme

    return parse_readme(Path(folder) / "README.md")


def parse_json(text: str, what: str) -> Any:
    """JSON typed into the app, or a Gradio error saying what is wrong."""
    import gradio as gr

    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise gr.Error(f"{what} must be JSON: {e}") from None


def _example_row(benchmark: Any) -> dict[str, Any]:
    """The first row of the benchmark's sample release, as ``load_dataset`` gives rows."""
    from .data import load_rows

    return load_rows(benchmark)[0]


def judged_metric_app(module_file: str | os.PathLike, benchmark: str, *, title: str | None = None,
                      loader: Callable[..., Any] | None = None):
    """The Gradio app of a judged metric: an image, its benchmark row (JSON, as ``load_dataset``
    gives it; the sample release's first row to start from), a judge spec and a preset. The score
    is served at ``/score`` (Gradio's API) as the module's whole result."""
    import gradio as gr

    from .benchmarks import get_benchmark

    bench = get_benchmark(benchmark)
    load = loader or ModuleLoader(module_file)
    presets = list(getattr(bench, "presets", {}) or {"paper": {}})
    default = getattr(bench, "default_preset", presets[0])
    default_judge = (getattr(bench, "presets", {}).get(default) or {}).get("judge") or ""

    @shows_errors
    def score(image: str | None, row_json: str, judge: str, preset: str) -> dict[str, Any]:
        if not image:
            raise gr.Error("Give the generated image.")
        row = parse_json(row_json, f"the {bench.pretty_name} row")
        if not isinstance(row, dict):
            raise gr.Error(f"the {bench.pretty_name} row must be a JSON object (one row of the dataset)")
        module = load(judge=judge.strip() or None, preset=preset, cache=False, progress=False)
        return module.compute(predictions=[image], references=[row])

    with gr.Blocks(title=title or bench.pretty_name) as app:
        gr.Markdown(f"# {title or Path(module_file).stem}\nScore one generated image against its "
                    f"{bench.pretty_name} row with a multimodal judge. API keys come from the Space's "
                    "secrets (`OPENAI_API_KEY`, `GEMINI_API_KEY`).")
        with gr.Row():
            image = gr.Image(type="filepath", label="Generated image")
            with gr.Column():
                row = gr.Code(json.dumps(_example_row(bench), indent=2, ensure_ascii=False, default=str),
                              language="json", label=f"{bench.pretty_name} row (JSON)")
                judge = gr.Textbox(default_judge, label="Judge",
                                   info="openai:<model>[@<url>], hf:<model> or vllm:<model>")
                preset = gr.Dropdown(presets, value=default, label="Preset")
                button = gr.Button("Score", variant="primary")
        result = gr.JSON(label="Result")
        button.click(score, [image, row, judge, preset], result, api_name="score")
        gr.Markdown(card_article(Path(module_file).parent))
    return app


def prompt_metric_app(module_file: str | os.PathLike, presets: dict[str, dict[str, Any]], *, title: str,
                      question_llm: bool = False, loader: Callable[..., Any] | None = None):
    """The Gradio app of a baseline metric that scores an image against its prompt alone (DSG, VIEScore,
    TIFA): an image, its prompt, a judge spec (the preset's to start from) and, where an LLM writes the
    questions (``question_llm``), that LLM's spec (empty: the judge). Served at ``/score`` as the module's
    whole result; a judge's own error reaches the page (:func:`shows_errors`)."""
    import gradio as gr

    load = loader or ModuleLoader(module_file)
    paper = presets.get("paper") or {}

    @shows_errors
    def score(image: str | None, prompt: str, judge: str, llm: str = "") -> dict[str, Any]:
        if not image or not prompt.strip():
            raise gr.Error("Give an image and its prompt.")
        kwargs = {"llm": llm.strip() or None, "store": False} if question_llm else {}
        return load(judge=judge.strip(), cache=False, **kwargs).compute(predictions=[image], references=[prompt])

    with gr.Blocks(title=title) as app:
        with gr.Row():
            image = gr.Image(type="filepath", label="Generated image")
            with gr.Column():
                prompt = gr.Textbox(label="Prompt")
                judge = gr.Textbox(paper.get("judge") or "openai:gpt-4o",
                                   label="Judge (answers the questions)" if question_llm else "Judge",
                                   info="hf:<model>, vllm:<model> or openai:<model>@<url> (keys from the Space's "
                                        "secrets)")
                inputs = [image, prompt, judge]
                if question_llm:
                    inputs.append(gr.Textbox(paper.get("llm") or "", label="LLM (writes the questions)",
                                             info="empty: the judge"))
                button = gr.Button("Score", variant="primary")
        result = gr.JSON(label="Result")
        button.click(score, inputs, result, api_name="score")
        gr.Markdown(card_article(Path(module_file).parent))
    return app
