"""TIFA's UnifiedQA question filter (tifascore/question_filter.py, unifiedqa.py): the authors' inputs and rules
with a scripted QA model, the filter inside question generation (questions kept apart from unfiltered ones), the
option through the metric module and ``evaluate --metric tifa``, and the real sequence-to-sequence path with a tiny
T5 loaded by ``from_pretrained``."""

from __future__ import annotations

from pathlib import Path

import evaluate
import pytest
from PIL import Image

from t2ireason.baselines.qa_filter import UNIFIEDQA, QuestionFilter, question_filter, word_f1
from t2ireason.baselines.tifa import TIFA
from t2ireason.judges.scripted import ScriptedJudge

from .test_tifa import REPLY, is_generation

ROOT = Path(__file__).resolve().parents[2]

CAPTION = "an orange cat sleeping on a sofa"


class ScriptedQA(QuestionFilter):
    """The filter's rules with the QA model's answers scripted by input (unknown inputs: an empty answer)."""

    def __init__(self, answers: dict[str, str], model: str = "scripted-qa"):
        super().__init__(model)
        self.scripted, self.asked = answers, []

    def answers(self, inputs):
        self.asked += list(inputs)
        return [self.scripted.get(i, "") for i in inputs]


def q(question: str, choices: list[str], answer: str) -> dict:
    return {"element": "cat", "element_type": "animal/human", "question": question, "choices": choices,
            "answer": answer}


def test_word_f1_is_the_authors():
    assert word_f1(["two", "cats"], ["two"]) == pytest.approx(2 / 3)
    assert word_f1([], []) == 1.0 and word_f1([], ["x"]) == 0.0 and word_f1(["x"], []) == 0.0
    assert word_f1(["a", "a"], ["a"]) == 1.0  # each gold word found counts, repeats too (their compute_prf)
    assert word_f1(["orange"], ["orange", "cat"]) == pytest.approx(2 / 3)


def test_the_authors_inputs_and_rules():
    questions = [q("is there a cat?", ["yes", "no"], "yes"),
                 q("what color is the cat?", ["orange", "black", "white", "gray", "brown"], "orange"),
                 q("what animal is this?", ["cat", "dog"], "cat"),
                 q("how many cats are there?", ["1", "2", "3"], "1"),
                 q("where is the cat?", ["sofa", "bed"], "sofa")]
    mc = {f"{x['question']} \n {CAPTION} \n " + "".join(f"({h}) {c} " for h, c in zip("ABCD", x["choices"])): a
          for x, a in zip(questions, ["yes", "orange", "dog", "1", "sofa"])}
    free = {f"{x['question']} \n {CAPTION}": a for x, a in zip(questions[1:], ["Orange!", "-", "one", "a red bed"])}
    qa = ScriptedQA({**mc, **free})
    kept, notes = qa.keep(questions, CAPTION)
    assert [k["question"] for k in kept] == ["is there a cat?", "what color is the cat?", "how many cats are there?"]
    assert notes == ["'what animal is this?': the QA model chose 'dog', not 'cat'",
                     "'where is the cat?': the QA model's own answer 'a red bed' is not 'sofa'"]
    assert "(E)" not in "".join(qa.asked) and "(D) gray " in qa.asked[1]  # the first four choices, as theirs
    # a yes/no question is checked by its choice alone; the others' free-form answers are asked after the choices,
    # only where the choice passed (as the authors' loop goes on to the next question)
    assert len(qa.asked) == 5 + 3 and f"is there a cat? \n {CAPTION}" not in qa.asked
    assert f"what animal is this? \n {CAPTION}" not in qa.asked


def test_many_prompts_ask_the_qa_model_in_two_batched_passes():
    class Counting(ScriptedQA):
        calls = 0

        def answers(self, inputs):
            Counting.calls += 1
            return super().answers(inputs)

    qa = Counting({"what color? \n a red cube \n (A) red (B) blue ": "red", "what color? \n a red cube": "red",
                   "is there a cube? \n a red cube \n (A) yes (B) no ": "yes",
                   "is there a cat? \n a dog \n (A) yes (B) no ": "yes"})
    groups = [([q("what color?", ["red", "blue"], "red"), q("is there a cube?", ["yes", "no"], "yes")], "a red cube"),
              ([q("is there a cat?", ["yes", "no"], "no")], "a dog")]
    out = qa.keep_many(groups)
    assert Counting.calls == 2 and [len(kept) for kept, _ in out] == [2, 0]
    assert out[1][1] == ["'is there a cat?': the QA model chose 'yes', not 'no'"]
    assert out[0] == qa.keep(*groups[0])  # the same as one prompt at a time


def test_the_filter_a_user_names():
    assert question_filter(None) is None and question_filter(False) is None
    assert question_filter("unifiedqa").model == UNIFIEDQA == question_filter(True).model
    assert question_filter("my/qa-model").model == "my/qa-model"
    scripted = ScriptedQA({})
    assert question_filter(scripted) is scripted
    with pytest.raises(ValueError, match="question_filter: True, 'unifiedqa'"):
        question_filter(3)


def test_tifa_keeps_the_questions_that_pass_and_keys_them_apart_from_unfiltered_ones(tmp_path):
    def reply(request):
        if is_generation(request):
            return REPLY
        return "orange" if "what color" in request.messages[0].content[1] else "yes"

    store = tmp_path / "q.sqlite"
    # the QA model disagrees on "what animal is on the sofa?" (it says dog) and agrees on the rest
    qa = ScriptedQA({"what animal is on the sofa? \n " + CAPTION + " \n (A) cat (B) dog (C) rabbit (D) bird ": "dog",
                     "is there a cat? \n " + CAPTION + " \n (A) yes (B) no ": "yes",
                     "is the cat sleeping? \n " + CAPTION + " \n (A) yes (B) no ": "yes",
                     "what color is the cat? \n " + CAPTION + " \n (A) orange (B) black (C) white (D) gray ": "orange",
                     "what color is the cat? \n " + CAPTION: "orange"})
    judge = ScriptedJudge(reply)
    [result] = TIFA(store=store, question_filter=qa).score([CAPTION], [Image.new("RGB", (8, 8))], judge)
    assert [x.question for x in result.questions] == ["is there a cat?", "what color is the cat?",
                                                       "is the cat sleeping?"]
    assert result.score == 1.0 and sum(is_generation(r) for r in judge.requests) == 1
    # kept: the same filter asks nothing again; without it, the LLM's questions are made (and kept) apart
    again = ScriptedJudge(reply)
    TIFA(store=store, question_filter=ScriptedQA(qa.scripted)).score([CAPTION], [Image.new("RGB", (8, 8))], again)
    assert not any(is_generation(r) for r in again.requests)
    unfiltered = ScriptedJudge(reply)
    [plain] = TIFA(store=store).score([CAPTION], [Image.new("RGB", (8, 8))], unfiltered)
    assert sum(is_generation(r) for r in unfiltered.requests) == 1 and len(plain.questions) == 4
    # none passes: the prompt's image fails, saying why
    [failed] = TIFA(store=False, question_filter=ScriptedQA({})).score([CAPTION], [Image.new("RGB", (8, 8))],
                                                                        ScriptedJudge(reply))
    assert failed.score is None and failed.failure.startswith(
        "TIFA questions: none of the 4 passed the question filter (scripted-qa): 'is there a cat?': the QA model chose")


def test_the_option_reaches_tifa_from_the_metric_module_and_evaluate_metric():
    from t2ireason.evaluation_metrics import metric_scorer
    from t2ireason.judges.spec import judge_setting

    qa = ScriptedQA({})
    module = evaluate.load(str(ROOT / "metrics" / "tifa"), judge=ScriptedJudge(["yes"]), store=False, cache=False,
                           progress=False, question_filter=qa)
    assert module.baseline.questions.method.qa_filter is qa
    scorer = metric_scorer("tifa")
    assert "question_filter" in scorer.score_options
    setting = judge_setting(scorer, None, "openai:gpt-4o", None, {"question_filter": "my/qa-model"})
    scorer.check(setting)
    made = scorer._made(setting, False, None)
    assert made.questions.method.qa_filter.model == "my/qa-model"
    with pytest.raises(ValueError, match="question_filter: True, 'unifiedqa'"):
        scorer.check(judge_setting(scorer, None, "openai:gpt-4o", None, {"question_filter": 3}))
    with pytest.raises(ValueError, match=r"unknown dsg option\(s\) \[.question_filter.\]"):
        metric_scorer("dsg").check(judge_setting(metric_scorer("dsg"), None, "openai:gpt-4o", None,
                                                 {"question_filter": "unifiedqa"}))


def _tiny_t5(path):
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE(vocab={s: i for i, s in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens(["<pad>", "</s>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="</s>")
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tok), d_model=16, d_kv=4, d_ff=32, num_layers=1, num_heads=2,
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                      decoder_start_token_id=tok.pad_token_id)
    T5ForConditionalGeneration(config).eval().save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_the_real_path_a_seq2seq_model_loaded_by_from_pretrained(tmp_path):
    folder = _tiny_t5(tmp_path / "tiny-t5")
    qa = QuestionFilter(str(folder), device="cpu", batch_size=2)
    said = qa.answers(["is there a cat? \n a cat", "what color? \n a red cube", "how many? \n two cubes"])
    assert len(said) == 3 and all(isinstance(s, str) for s in said)
    assert qa.answers(["is there a cat? \n a cat"]) == said[:1]  # greedy: the same answer, batched or not
    questions = [q("is there a cat?", ["yes", "no"], "yes"), q("what color?", ["red", "blue"], "red")]
    kept, notes = qa.keep(questions, "a cat")
    assert len(kept) + len(notes) == 2  # each question kept or said why not (a random model's answers)
    assert qa.identity() == {"model": str(folder), "revision": None, "free_form_threshold": 0.6}


def test_a_qa_model_that_cannot_be_loaded_is_named(tmp_path):
    with pytest.raises(ValueError, match="question_filter: cannot load the text QA model '.*no-such-model'"):
        QuestionFilter(str(tmp_path / "no-such-model")).answers(["is there a cat? \n a cat"])
