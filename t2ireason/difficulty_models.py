"""The models behind MT2IE's difficulty proxies (seed 002, section 6 and appendix D): a constituency parser for the
paper's Yngve depth, and a causal language model for the perplexity proxy.

- The parser: stanza's English constituency parser, the ``[mt2ie]`` extra (``pip install 't2ireason[mt2ie]'``).
  stanza's package holds the code; its models (English's tokenizer, tagger and constituency parser) are fetched
  by stanza from the Hugging Face Hub on first use into ``$STANZA_RESOURCES_DIR`` (default
  ``~/stanza_resources``), or read from there when it is offline (``HF_HUB_OFFLINE=1``: a copy the user made).
  :func:`stanza_parser` is the ``text -> tree`` callable that :func:`t2ireason.difficulty.yngve_depth` reads (a
  tuple of trees, one per sentence, where stanza splits the prompt). ``--parser MODULE:FUNCTION`` plugs in any
  other parser.
- The language model: any causal LM ``transformers`` loads (``AutoModelForCausalLM``; the paper used Llama 2),
  :class:`Perplexity`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["stanza_parser", "load_stanza_parser", "stanza_tree", "default_parser", "Perplexity", "PARSER_EXTRA"]

#: the extra that installs the paper's parser
PARSER_EXTRA = "mt2ie"


def stanza_tree(tree: Any) -> Any:
    """A stanza constituency tree (``label``, ``children``) as nested lists, a word as its text (the shape
    :func:`t2ireason.difficulty.yngve_depth` walks): a node is the list of its children, a leaf its word."""
    if not tree.children:
        return str(tree.label)
    return [stanza_tree(child) for child in tree.children]


def load_stanza_parser(model_dir: str | os.PathLike | None = None, *, download: bool | None = None,
                       pipeline: Any = None) -> Callable[[str], Any]:
    """A ``text -> tree`` callable over stanza's English constituency parser. ``model_dir``: stanza's resources folder
    (default ``$STANZA_RESOURCES_DIR``, else stanza's own default); ``download``: let stanza fetch what is missing
    (default: unless ``HF_HUB_OFFLINE`` is set). Raises ``ImportError`` without the extra, and stanza's error when
    the models cannot be had. ``pipeline``: a stanza ``Pipeline`` made already (it must run ``constituency``)."""
    if pipeline is None:
        import stanza

        if download is None:
            download = os.environ.get("HF_HUB_OFFLINE", "") in ("", "0")
        kwargs: dict[str, Any] = {"lang": "en", "processors": "tokenize,pos,constituency", "verbose": False,
                                  "download_method": "reuse_resources" if download else None}
        folder = model_dir or os.environ.get("STANZA_RESOURCES_DIR")
        if folder:
            kwargs["dir"] = str(folder)
        pipeline = stanza.Pipeline(**kwargs)

    def parse(text: str) -> Any:
        trees = tuple(stanza_tree(s.constituency) for s in pipeline(text).sentences)
        if not trees:
            raise ValueError(f"stanza found no sentence in {text!r}")
        return trees[0] if len(trees) == 1 else trees

    parse.__qualname__ = parse.__name__ = "stanza_parser"  # how settings.json describes it
    parse.__module__ = __name__
    return parse


@lru_cache(maxsize=1)
def _default() -> Callable[[str], Any]:
    return load_stanza_parser()


def stanza_parser(text: str) -> Any:
    """The parse of ``text`` by stanza's English constituency parser (loaded once, :func:`load_stanza_parser`'s
    defaults); usable as ``--parser t2ireason.difficulty_models:stanza_parser``."""
    return _default()(text)


def default_parser() -> tuple[Callable[[str], Any] | None, str | None]:
    """The paper's parser where it can be had: (:func:`stanza_parser`, None) when the ``[mt2ie]`` extra is installed and
    its models load; else (None, why not), said in one line."""
    try:
        import stanza  # noqa: F401 - only whether the extra is installed
    except ImportError:
        return None, (f"no constituency parser is installed (pip install 't2ireason[{PARSER_EXTRA}]' for stanza's, "
                      "or give --parser MODULE:FUNCTION)")
    try:
        _default()
    except Exception as e:  # noqa: BLE001 - stanza's own errors: no models offline, a download that failed
        return None, f"stanza's English constituency parser could not be loaded ({type(e).__name__}: {e})"
    return stanza_parser, None


class Perplexity:
    """A prompt's perplexity under a causal language model (appendix D's fifth proxy; the paper's was Llama 2):
    exp of the mean negative log-likelihood of the text's tokens, each after those before it (the first token,
    the tokenizer's BOS where it adds one, is given). ``model``: a folder or Hub id ``AutoModelForCausalLM`` loads,
    or ``(model, tokenizer)`` loaded already."""

    def __init__(self, model: Any, *, device: str | None = None):
        if isinstance(model, tuple):
            self.model, self.tokenizer = model
            self.name = getattr(getattr(self.model, "config", None), "_name_or_path", "") or type(self.model).__name__
        else:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self.name = str(model)
            self.tokenizer = AutoTokenizer.from_pretrained(self.name)
            self.model = AutoModelForCausalLM.from_pretrained(self.name)
        self.model.eval()
        if device:
            self.model.to(device)

    def __call__(self, text: str) -> float:
        import torch

        ids = self.tokenizer(text, return_tensors="pt").input_ids.to(self.model.device)
        if ids.shape[1] < 2:
            raise ValueError(f"perplexity needs two tokens or more; {text!r} is {ids.shape[1]}")
        with torch.no_grad():
            loss = self.model(input_ids=ids, labels=ids).loss  # mean NLL of tokens 2..n, each given those before
        return float(math.exp(loss.item()))

    def __repr__(self) -> str:  # settings.json's description of the run's difficulty model
        return f"Perplexity({self.name!r})"
