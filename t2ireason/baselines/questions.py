"""A prompt's questions, written once by an LLM with a paper's published prompt and kept on disk.

DSG and TIFA score an image by the questions an LLM writes for its prompt. They are made the way the
benchmarks' criteria are, by :class:`~t2ireason.rewards.criteria.Criteria` (one method object per metric:
:class:`QuestionMethod`): keyed by the metric, the prompt, the LLM's identity and the method (its templates,
its version, the sampling it asks with), kept in ``criteria.sqlite`` under file locks, so that a prompt's
questions are asked for once, whatever the processes, and every later evaluation reads the same ones. A
generation that fails (a reply still malformed after its re-asks) is recorded once too, with the LLM's raw
replies: the prompt's images fail with the reason and those replies, in this evaluation and every later one,
without asking the LLM again; ``retry_failed=True`` (``t2ireason evaluate --retry-failed``) asks again. One
that failed because the LLM could not answer at all (its server down) is not recorded: asked again next time.
A row given with its questions (a released question set: DSG-1k, TIFA v1.0) is scored as given.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..images import ImageError, load_images
from ..judges.base import Sampling
from ..results import ImageResult
from ..rewards.criteria import KEPT_FAILURE, Criteria, Made, Method
from .answering import ANSWERS
from .base import Baseline, failed_image, image_source, prompt_rows

__all__ = ["QuestionMethod", "Questions", "QuestionBaseline", "Made", "LLM_UNAVAILABLE", "made_failure",
           "question_replies"]

#: ends the failure of a prompt whose questions the LLM could not be asked for (its server failed): its images'
#: failures are retryable (``t2ireason evaluate --retry-failed``), the questions being asked for again
LLM_UNAVAILABLE = " (the LLM could not answer; asking again may succeed)"


def made_failure(what: str, parsed: Any) -> str:
    """The failure of a prompt whose ``what`` could not be made (``parsed``: the last ask's outcome)."""
    return f"{what}: {parsed.error}" + (LLM_UNAVAILABLE if parsed.transient else "")


def question_replies(row: dict[str, Any]) -> list[str]:
    """The LLM's raw replies that made (or failed to make) ``row``'s questions, in the order asked."""
    import json

    outputs = (json.loads(row.get("extra") or "{}").get("questions_by") or {}).get("outputs") or []
    return [text for texts in (outputs.values() if isinstance(outputs, dict) else [outputs]) for text in texts]


#: bumped when a method changes in a way its templates do not show: older questions are then made again
VERSION = 1


class QuestionMethod(Method):
    """A metric that writes its own questions: no benchmark behind it, rows of its own :attr:`features`,
    ``questions`` given or made by :meth:`make` (a subclass per paper)."""

    criteria_fields = ("questions",)

    def __init__(self, sampling: Sampling, max_reasks: int = 2):
        super().__init__(None)
        if max_reasks < 0:
            raise ValueError(f"max_reasks must be >= 0, got {max_reasks}")
        self.sampling = sampling
        self.max_reasks = max_reasks

    @property
    def features(self) -> Any:
        raise NotImplementedError

    def row(self, prompt: str, meta: dict[str, Any], ident: str) -> dict[str, Any]:
        from ..rewards.criteria import conform

        return {**conform({**meta, "prompt": prompt}, self.features), "id": str(meta.get("id") or ident)}

    def configs(self, row: dict[str, Any]) -> list[str]:
        return []

    def keeps_failure(self, made: Made) -> bool:
        """A malformed reply's failure is kept (asked for once); an LLM that could not answer is asked again."""
        return not made.failure.endswith(LLM_UNAVAILABLE)

    def method(self) -> dict[str, Any]:
        """The version, the templates' text and the sampling the questions are asked with: another of any makes
        other questions."""
        digest = hashlib.sha256()
        for name in self.templates:
            digest.update((resources.files("t2ireason") / "templates" / name).read_bytes())
        return {"version": VERSION, "templates": digest.hexdigest(), "sampling": self.sampling.to_dict(),
                "max_reasks": self.max_reasks}


class Questions:
    """The questions of each prompt, from the rows given or made by ``llm`` and kept in ``store`` (a path,
    True for the default ``criteria.sqlite``, False for this object's life only).

    ``llm``: a spec (loaded on first use, with ``llm_kwargs`` and the response cache ``cache``, and closed by
    :meth:`close`), a judge object, or None: the judge given to :meth:`rows` writes them too. The response cache
    keeps each deterministic reply as it arrives: an interrupted generation pays for none twice."""

    def __init__(self, method: QuestionMethod, llm: Any = None, *, llm_kwargs: dict[str, Any] | None = None,
                 store: str | Path | bool = True, cache: str | Path | bool = True):
        from ..judges import JudgeSpec, validate_judge

        self.method = method
        self.spec = llm if isinstance(llm, str | JudgeSpec) else None
        if self.spec is not None:
            validate_judge(self.spec, llm_kwargs)  # a bad spec or option is said before anything is asked
        elif llm_kwargs:
            raise ValueError("llm_kwargs go with an LLM given as a spec, not with an object (set them on it)")
        self.llm = None if self.spec is not None else llm
        self.llm_kwargs = dict(llm_kwargs or {})
        self.store = store
        self.cache = cache
        self._loaded: Any = None
        self._criteria: dict[int, Criteria] = {}
        self._lock = threading.Lock()  # scoring threads (an HTTP judge's rolling window) load and key once

    def _llm(self, judge: Any) -> Any:
        if self.spec is None:
            return self.llm if self.llm is not None else judge
        if self._loaded is None:
            from ..judges import load_judge

            self._loaded = load_judge(self.spec, cache=self.cache, **self.llm_kwargs)
        return self._loaded

    def criteria(self, judge: Any) -> Criteria:
        """The store of the LLM that writes the questions when ``judge`` is the scoring judge."""
        with self._lock:
            llm = self._llm(judge)
            if id(llm) not in self._criteria:
                self._criteria[id(llm)] = Criteria(self.method, llm, cache=self.store)
            return self._criteria[id(llm)]

    def rows(self, rows: Sequence[dict[str, Any]], judge: Any, retry_failed: bool = False
             ) -> tuple[list[dict[str, Any]], list[str | None]]:
        """Each row with its questions, and per row None or why it has none (its image then fails, unasked);
        ``retry_failed``: a prompt whose questions failed before is asked for again."""
        criteria = self.criteria(judge)
        return criteria.rows([r["prompt"] for r in rows], rows, [r["id"] for r in rows], retry_failed=retry_failed)

    def llm_identity(self, judge: Any) -> dict[str, Any] | None:
        return self.criteria(judge).llm_identity()

    def close(self) -> None:
        with self._lock:
            loaded, self._loaded = self._loaded, None
        if loaded is not None:
            loaded.close()


class QuestionBaseline(Baseline):
    """A baseline whose questions an LLM writes once per prompt (DSG, TIFA), a subclass per paper naming its
    :attr:`method`, the sampling it asks with by default and the row field that gives a prompt's questions.

    ``llm``: what writes a prompt's questions: a spec (loaded on first use with ``llm_kwargs``), a judge object,
    or None for the scoring judge itself; ``store``: where they are kept (True: ``criteria.sqlite`` beside the
    response cache; a path; False: this object's life only); ``cache``: the LLM's response cache (a spec's);
    ``question_sampling`` and ``question_max_reasks``: how the LLM is asked (default: the authors' sampling;
    2 re-asks)."""

    #: the paper's question-writing method (a :class:`QuestionMethod` subclass)
    method: type[QuestionMethod]
    #: how the authors asked their LLM
    question_sampling: Sampling
    #: the row field holding a prompt's questions when they are given (a released question set)
    given_field: str

    def __init__(self, llm: Any = None, *, llm_kwargs: dict[str, Any] | None = None, store: str | Path | bool = True,
                 cache: str | Path | bool = True, question_sampling: Sampling | dict[str, Any] | None = None,
                 question_max_reasks: int = 2):
        sampling = Sampling(**question_sampling) if isinstance(question_sampling, dict) else question_sampling
        self.questions = Questions(self.method(sampling or self.question_sampling, question_max_reasks), llm,
                                   llm_kwargs=llm_kwargs, store=store, cache=cache)

    def asked(self, rows: Sequence[Any], images: Sequence[Any], judge: Any, options: dict[str, Any]
              ) -> tuple[list[dict[str, Any]], list[str | None], list[Any], str, Sampling | None]:
        """Each prompt's row with its questions (given, or made: after the images are opened, so that an image
        that cannot be had is said before any question is paid for), per row None or why it has none, the
        images loaded, and the ``answers`` and ``sampling`` options checked. ``retry_failed`` (option): a prompt
        whose questions failed before is asked for again."""
        answers = options.get("answers", "chat")
        if answers not in ANSWERS:
            raise ValueError(f"answers must be one of {', '.join(ANSWERS)}, got {answers!r}")
        sampling = options.get("sampling")
        sampling = Sampling(**sampling) if isinstance(sampling, dict) else sampling
        rows = prompt_rows(rows, given=self.given_field)
        if len(rows) != len(images):
            raise ValueError(f"got {len(rows)} prompts but {len(images)} images")
        if not rows:
            return [], [], [], answers, sampling
        loaded = load_images(images)
        made, failures = self.questions.rows(rows, judge, bool(options.get("retry_failed")))
        return made, failures, loaded, answers, sampling

    def to_ask(self, images: Sequence[Any], made: Sequence[dict[str, Any]], failures: Sequence[str | None],
               loaded: Sequence[Any]) -> tuple[list[ImageResult], list[tuple[ImageResult, dict[str, Any], Any]]]:
        """One result per image, in order, and the ``(result, row, image)`` of those whose questions are to be
        asked: an image whose prompt has no questions (and why: retryable when the LLM could not answer; with
        the LLM's raw replies, and ``context["questions_failed"]``, when its replies could not be read) or that
        could not be opened fails here, unasked."""
        results: list[ImageResult] = []
        asked: list[tuple[ImageResult, dict[str, Any], Any]] = []
        for given, row, image, why in zip(images, made, loaded, failures):
            source = image_source(given, image)
            if why is not None or not row.get("questions"):
                results.append(failed_image(row, source, why or f"the prompt has no {self.pretty_name} questions"))
                results[-1].retryable = bool(why and why.endswith(LLM_UNAVAILABLE))
                if why:
                    results[-1].replies = question_replies(row)
                    results[-1].context["questions_failed"] = "recorded" if why.endswith(KEPT_FAILURE) else "now"
            elif isinstance(image, ImageError):
                results.append(failed_image(row, source, f"image: {image}"))
            else:
                results.append(ImageResult(id=row["id"], prompt=row["prompt"], score=None, image=source))
                asked.append((results[-1], row, image))
        return results, asked

    def close(self) -> None:
        self.questions.close()
