"""The shape of T2I-ReasonBench: its four dimensions (their release files, question groups and roles), the
weights that make an image's score, and the row of its Hub dataset with what each field holds."""

from __future__ import annotations

from dataclasses import dataclass

import datasets

ROLES = ("reason", "detail", "quality")


@dataclass(frozen=True)
class Dimension:
    """One dimension (config) of the benchmark: its release files and question groups."""

    prompts_file: str  # prompts/<prompts_file>.json
    name_in_files: str  # deepseek_evaluation_qs/evaluation_<name>.json, pipeline_prompts/<name>_pipeline_prompts.json
    groups: tuple[tuple[str, str], ...]  # (group key in the evaluation file, role), in the release's order
    fields: tuple[str, ...]  # dimension-specific prompt fields given to the stage-1 LLM

    @property
    def group_roles(self) -> dict[str, str]:
        return dict(self.groups)

    def files(self) -> tuple[str, str, str]:
        return (f"prompts/{self.prompts_file}.json",
                f"deepseek_evaluation_qs/evaluation_{self.name_in_files}.json",
                f"pipeline_prompts/{self.name_in_files}_pipeline_prompts.json")


DIMENSIONS: dict[str, Dimension] = {
    "idiom": Dimension("idiom_interpretation", "idiom",
                       (("reason_evaluation", "reason"), ("quality_evaluation", "quality")),
                       ("idiom", "idiom_meaning")),
    "textual": Dimension("textual_image_design", "textual_image",
                         (("reason_evaluation", "reason"), ("quality_evaluation", "quality")), ()),
    "entity": Dimension("entity_reasoning", "entity",
                        (("entity_evaluation", "reason"), ("other_details_evaluation", "detail"),
                         ("quality_evaluation", "quality")), ("explicit_meaning",)),
    "scientific": Dimension("scientific_reasoning", "scientific",
                            (("scientific_evaluation", "reason"), ("other_details_evaluation", "detail"),
                             ("quality_evaluation", "quality")), ("explicit_meaning",)),
}

#: T2I-ReasonScore = w1 S_reason + w2 S_detail + w3 S_quality (section 5, "Implementation Details")
PAPER_WEIGHTS = {
    "idiom": {"reason": 0.9, "detail": 0.0, "quality": 0.1},
    "textual": {"reason": 0.9, "detail": 0.0, "quality": 0.1},
    "entity": {"reason": 0.7, "detail": 0.2, "quality": 0.1},
    "scientific": {"reason": 0.7, "detail": 0.2, "quality": 0.1},
}
#: the official scripts' "reasoning accuracy"; quality is reported on its own
OFFICIAL_WEIGHTS = {
    "idiom": {"reason": 1.0},
    "textual": {"reason": 1.0},
    "entity": {"reason": 0.7, "detail": 0.3},
    "scientific": {"reason": 0.7, "detail": 0.3},
}


def features() -> datasets.Features:
    """The schema of one row of the Hub dataset."""
    text = datasets.Value("string")
    pair = {"question_key": text, "question": text, "criterion_key": text, "criterion": text,
            "criterion_json": text}
    return datasets.Features({
        "id": datasets.Value("int64"),
        "name": text,
        "original_id": text,
        "dimension": text,
        "prompt": text,
        "tag": text,
        "idiom": text,
        "idiom_meaning": text,
        "explicit_meaning": text,
        "image_content": text,
        "evaluation": datasets.List({"group": text, "role": text, "pairs": datasets.List(pair), "extra": text,
                                     "raw": text}),
        "evaluation_prompt": text,
        "reason": datasets.List(text),
        "reason_prompt": text,
        "extra": text,
    })


#: what each field holds, for the dataset card
FIELD_DOCS = {
    "id": "The prompt's id in its dimension (1 to 200), as the release gives it; null when the release's id "
          "is not an integer (see original_id).",
    "name": "The file stem of the row's images and the end of its row id: the id with four digits (0001 for "
            "id 1, as the official layout names images); for an id that is not an integer, the id itself "
            "when it can be a file name, else a safe name made from it (its readable part and a hash; each "
            "mapping is an unsafe_id anomaly of build_report.json, and original_id keeps the id). A repeated "
            "id adds -2, -3...",
    "original_id": "The release's id as JSON text when it is not an integer (text, a number with decimals, "
                   "missing...); else null.",
    "dimension": "idiom, textual, entity or scientific (the config).",
    "prompt": "The prompt to draw, from prompts/*.json, byte for byte (the evaluation file's prompt when "
              "prompts/*.json has no record for the id).",
    "tag": "Subcategory: free text (idiom), image type (textual), entity type (entity), "
           "'discipline: topic' (scientific).",
    "idiom": "The idiom the prompt uses (idiom only).",
    "idiom_meaning": "What the idiom means (idiom only).",
    "explicit_meaning": "The prompt with its implicit entity or outcome made explicit (entity, scientific).",
    "image_content": "What the image should convey, as written by the stage-1 LLM; a value that is not text "
                     "(the release has objects in a few records) is kept as its JSON text.",
    "evaluation": "The question-criterion groups, in the release's order.",
    "evaluation.group": "The group's key in the release: reason_evaluation (idiom, textual), entity_evaluation, "
                        "scientific_evaluation, other_details_evaluation (entity, scientific), "
                        "quality_evaluation, or another key the release uses.",
    "evaluation.role": "What the group scores: reason, detail or quality (S_reason, S_detail, S_quality); null "
                       "for a group the reader could not place (kept, reported, not scored).",
    "evaluation.pairs": "The group's question-criterion pairs, in the order of their numbers.",
    "evaluation.pairs.question_key": "The release's key of the question (q1, or irregular ones such as sci_q1, aq1).",
    "evaluation.pairs.question": "A question about the image, byte for byte (a value that is not text is kept "
                                 "as its JSON text).",
    "evaluation.pairs.criterion_key": "The release's key of the criterion (c1, sci_c1, ac1...); null for a "
                                      "question the release gives no criterion.",
    "evaluation.pairs.criterion": "What earns a score of 1, 0.5 and 0, as the judge reads it: the release's "
                                  "text byte for byte; for a criterion given as an object of score levels "
                                  "(1 / 0.5 / 0, score_1 / score_0.5 / score_0 in any order) the text "
                                  "'1: ... 0.5: ... 0: ...'; for an object holding one text (score, criteria) "
                                  "that text; for any other object 'key: value; ...'.",
    "evaluation.pairs.criterion_json": "The criterion as the release gives it, as JSON text, when it is not "
                                       "text (an object, a list, a number); null for a text criterion.",
    "evaluation.extra": "The group's keys that are not question-criterion pairs (a 'scoring' note, a rubric "
                        "object of score_1, score_2... lines, a criterion without its question), as a JSON "
                        "object; sent to the judge with the group. Null when there are none.",
    "evaluation.raw": "The whole group as released, as JSON text in the release's key order (what the "
                      "official scripts print into their prompt).",
    "evaluation_prompt": "The prompt as written in the evaluation file where it differs from prompts/*.json "
                         "(else null); the prompt field is the one used for generation.",
    "reason": "The reasoning of the LLM that rewrote the prompt for the decoupled pipeline (pipeline_prompts).",
    "reason_prompt": "The LLM-rewritten explicit prompt for the decoupled 'reason first, then draw' baseline.",
    "extra": "Keys of the release records outside the schema, as JSON by source file (prompts, evaluation, "
             "pipeline); else null.",
}
