"""TIFA's question filter (Hu et al., ICCV 2023, section 3.2; tifascore/question_filter.py and unifiedqa.py): a text
question-answering model, UnifiedQA, answers each generated question from the caption alone, and the question is
kept only when it agrees with the LLM's answer.

The authors' rules, kept here:

1. multiple choice: the input ``"<question> \\n <caption> \\n (A) <choice> (B) <choice> ... "`` (the first four
   choices); the model's greedy answer (at most 30 new tokens), decoded, must be the LLM's answer exactly;
2. free form, for an answer other than yes or no: the input ``"<question> \\n <caption>"``; the model's answer,
   reduced to letters, digits and spaces in lower case (a number word read as its number where the LLM's answer
   is a number, with ``word2number``), must share more than 0.6 F1 over words with the LLM's answer (their
   ``compute_prf``: a word counts as found when it is among the other side's words).

The model is any sequence-to-sequence checkpoint ``transformers`` loads (``AutoModelForSeq2SeqLM``): by default the
authors' ``allenai/unifiedqa-v2-t5-large-1363200``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["QuestionFilter", "UNIFIEDQA", "question_filter", "word_f1"]

#: the authors' question-answering model (tifascore/unifiedqa.py)
UNIFIEDQA = "allenai/unifiedqa-v2-t5-large-1363200"
#: the free-form answer's word F1 a question must pass (tifascore/question_filter.py's FREE_FORM_THRESHOLD)
FREE_FORM_THRESHOLD = 0.6
_HEADINGS = ("(A)", "(B)", "(C)", "(D)")  # the first four choices, as theirs


def word_f1(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """The authors' F1 of two word lists: a word is a hit when it is among the other side's (repeats count each
    time); two empty lists agree (1), one empty list against words does not (0)."""
    if not gold:
        return 1.0 if not predicted else 0.0
    hits = sum(g in predicted for g in gold)
    extra = sum(p not in gold for p in predicted)
    precision = hits / (hits + extra) if hits + extra else 0.0
    recall = hits / len(gold)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _plain(answer: str) -> str:
    return "".join(c for c in answer if c.isalnum() or c.isspace()).strip().lower()


def _as_number(answer: str) -> str:
    try:
        from word2number import w2n
    except ImportError as e:
        raise ImportError("TIFA's question filter reads number words with word2number: pip install "
                          "'t2i-reason[text]' (or word2number)") from e

    try:
        return str(w2n.word_to_num(answer))
    except ValueError:  # not a number in words: compared as it is
        return answer


class QuestionFilter:
    """TIFA's UnifiedQA check (see the module docstring) with the text QA model ``model`` (a Hub id or a folder),
    loaded on first use on ``device`` (default: CUDA when there is one), asked ``batch_size`` inputs at a time."""

    def __init__(self, model: str = UNIFIEDQA, *, revision: str | None = None, device: str | None = None,
                 batch_size: int = 16):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model, self.revision, self.batch_size = model, revision, batch_size
        self._device = device
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        """What decides which questions pass (part of the questions' key: another model makes other ones)."""
        return {"model": self.model, "revision": self.revision, "free_form_threshold": FREE_FORM_THRESHOLD}

    def check_loadable(self) -> None:
        """A ``ValueError`` in one line unless the QA model can be loaded: a folder with its ``config.json``, or a Hub
        id whose ``config.json`` is in the local cache (offline, ``HF_HUB_OFFLINE``) or can be fetched (online); and
        ``word2number``, which reads number words, is installed. Said before questions are written (paid for)."""
        import difflib
        import importlib.util
        from pathlib import Path

        if importlib.util.find_spec("word2number") is None:
            raise ValueError("question_filter: TIFA's question filter reads number words with word2number: pip "
                             "install 't2i-reason[text]' (or word2number)")
        folder = Path(self.model).expanduser()
        if folder.is_dir():
            if not (folder / "config.json").is_file():
                raise ValueError(f"question_filter: the QA model folder {self.model!r} has no config.json: not a "
                                 "saved model (give the folder save_pretrained wrote, or a Hub id)")
            return
        from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache
        from huggingface_hub.errors import HFValidationError

        close = difflib.get_close_matches(self.model, ["unifiedqa", UNIFIEDQA], 1, 0.7)
        hint = f" (did you mean {close[0]!r}?)" if close and close[0] != self.model else ""
        try:
            if isinstance(try_to_load_from_cache(self.model, "config.json", revision=self.revision), str):
                return
            if constants.HF_HUB_OFFLINE:
                raise ValueError("not in the local Hugging Face cache and HF_HUB_OFFLINE is set: download it first "
                                 f"(`hf download {self.model}`), or give a local folder")
            hf_hub_download(self.model, "config.json", revision=self.revision)
        except HFValidationError:
            raise ValueError(f"question_filter: {self.model!r} is neither a folder here nor a Hub id{hint}; give "
                             "'unifiedqa' (the authors' UnifiedQA), a text QA model's Hub id or folder, or none") from None
        except Exception as e:  # noqa: BLE001 - no such repository, no network, offline: said here, in one line
            cause = " ".join(str(e).split())[:300]
            raise ValueError(f"question_filter: the text QA model {self.model!r} cannot be loaded{hint}: {cause}") \
                from None

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._loaded is None:
                import torch
                from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

                device = self._device or ("cuda" if torch.cuda.is_available() else "cpu")
                try:
                    tokenizer = AutoTokenizer.from_pretrained(self.model, revision=self.revision)
                    model = AutoModelForSeq2SeqLM.from_pretrained(self.model, revision=self.revision)
                except (OSError, ValueError) as e:  # not found, offline, not a sequence-to-sequence model
                    raise ValueError(f"question_filter: cannot load the text QA model {self.model!r} "
                                     f"(a sequence-to-sequence checkpoint, as UnifiedQA's T5): {e}") from e
                self._loaded = (tokenizer, model.to(device).eval())
            return self._loaded

    def answers(self, inputs: Sequence[str]) -> list[str]:
        """The model's greedy answer to each input (at most 30 new tokens, as the authors' ``run_model``)."""
        import torch

        tokenizer, model = self._load()
        out: list[str] = []
        for start in range(0, len(inputs), self.batch_size):
            enc = tokenizer(list(inputs[start : start + self.batch_size]), return_tensors="pt", padding=True)
            with torch.inference_mode():
                made = model.generate(**enc.to(model.device), max_new_tokens=30, do_sample=False)
            out += tokenizer.batch_decode(made, skip_special_tokens=True)
        return out

    def keep(self, questions: Sequence[dict[str, Any]], caption: str) -> tuple[list[dict[str, Any]], list[str]]:
        """``(kept, notes)``: the questions (``question``, ``choices``, ``answer``) about ``caption`` that pass,
        and why each other one did not."""
        return self.keep_many([(questions, caption)])[0]

    def keep_many(self, groups: Sequence[tuple[Sequence[dict[str, Any]], str]]
                  ) -> list[tuple[list[dict[str, Any]], list[str]]]:
        """:meth:`keep` of each ``(questions, caption)``, the QA model asked in two batched passes over all of
        them: the multiple-choice inputs, then the free-form ones of the questions that passed (as the authors
        ask them: after the choice, for an answer other than yes or no)."""
        flat = [(g, q, caption) for g, (questions, caption) in enumerate(groups) for q in questions]
        chosen = self.answers([f"{q['question']} \n {caption} \n " + "".join(f"{h} {c} " for h, c in
                                                                             zip(_HEADINGS, q["choices"]))
                               for _, q, caption in flat])
        free = [k for k, ((_, q, _), answer) in enumerate(zip(flat, chosen))
                if answer == q["answer"] and q["answer"] not in ("yes", "no")]
        said = dict(zip(free, self.answers([f"{flat[k][1]['question']} \n {flat[k][2]}" for k in free])))
        out: list[tuple[list[dict[str, Any]], list[str]]] = [([], []) for _ in groups]
        for k, ((g, q, _), answer) in enumerate(zip(flat, chosen)):
            kept, notes = out[g]
            if answer != q["answer"]:
                notes.append(f"{q['question']!r}: the QA model chose {answer!r}, not {q['answer']!r}")
                continue
            if k in said:
                text = _plain(said[k])
                if q["answer"].isnumeric():
                    text = _as_number(text)
                if word_f1(q["answer"].split(), text.split()) <= FREE_FORM_THRESHOLD:
                    notes.append(f"{q['question']!r}: the QA model's own answer {text!r} is not {q['answer']!r}")
                    continue
            kept.append(q)
        return out


def question_filter(value: Any) -> QuestionFilter | None:
    """A :class:`QuestionFilter` from what a user names: None or False (no filter), True or ``"unifiedqa"`` (the
    authors' model), a Hub id or folder (another QA model), or an object with ``keep`` and ``identity``."""
    if value is None or value is False:
        return None
    if value is True or value == "unifiedqa":
        return QuestionFilter()
    if isinstance(value, str):
        return QuestionFilter(value)
    if callable(getattr(value, "keep", None)) and callable(getattr(value, "identity", None)):
        return value
    raise ValueError(f"question_filter: True, 'unifiedqa', a QA model's Hub id or folder, or an object with keep() "
                     f"and identity(); got {type(value).__name__}")
