"""DSG with scripted judges: the authors' prompts, their output format read (and malformed replies re-asked,
then recorded), questions made once per prompt and kept, yes/no answers, the dependency rules, failures."""

from __future__ import annotations

import hashlib

import pytest
from PIL import Image

from t2ireason.baselines import get_baseline, score_images
from t2ireason.baselines.dsg import (
    DSG,
    category_of,
    clean_parents,
    dsg_request,
    output_text,
    parse_dependencies,
    parse_questions,
    parse_tuples,
    question_scores,
)
from t2ireason.judges.base import Reply
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.parsing import ReplyParseError
from t2ireason.prompts import verbatim

# The DSG the authors' notebook (t2i_eval_example.ipynb) shows, in their output format.
TUPLES = ("1 | entity - whole (baby)\n2 | entity - whole (mattress)\n3 | entity - whole (shirt)\n"
          "4 | attribute - color (shirt, black white and blue)\n5 | attribute - state (baby, sleeping)")
DEPENDENCIES = "1 | 0\n2 | 0\n3 | 0\n4 | 3\n5 | 1"
QUESTIONS = ("1 | Is there a baby?\n2 | Is there a mattress?\n3 | Is there a shirt?\n"
             "4 | Is the shirt black, white, and blue?\n5 | Is the baby sleeping?")
PROMPT = "A baby is sleeping on a covered mattress. His shirt is black white and blue."


def image(color: str = "white") -> Image.Image:
    return Image.new("RGB", (16, 16), color)


def task_of(request) -> str:
    text = request.messages[0].text
    if text.startswith("Task: given input prompts, describe each scene"):
        return "tuple"
    if text.startswith("Task: given input prompts and tuples, describe the parent"):
        return "dependency"
    if text.startswith("Task: given input prompts and skill-specific tuples, re-write"):
        return "question"
    return "vqa"


def replies(answers: dict[str, str] | None = None, *, tuples: str = TUPLES, questions: str = QUESTIONS,
            dependencies: str = DEPENDENCIES):
    """A scripted model's replies: it writes the DSG and answers each question (default: yes)."""

    def reply(request):
        task = task_of(request)
        if task != "vqa":
            return {"tuple": tuples, "dependency": dependencies, "question": questions}[task]
        question = request.messages[0].text.split("Question: ", 1)[1]
        return (answers or {}).get(question, "yes")

    return reply


def judge(answers: dict[str, str] | None = None, **kwargs: str) -> ScriptedJudge:
    return ScriptedJudge(replies(answers, **kwargs))


# -- the published prompts -------------------------------------------------------------------------------------

def test_the_prompts_are_the_authors_composition_byte_for_byte():
    """The texts make_prompt() composes at the pinned commit (their SHA-256, taken from the authors' code's own
    output), with the test input as the slot."""
    expected = {"tuple": "bea26bb7471105f3d1f73590cce9f409bee7b2e7a19dc8153e0e70b7562ccbc7",
                "dependency": "4cecc236ffaf823000ff1ded436d1e32a157831adf44eee087e4e82e54db35da",
                "question": "e715a46ff90bc2641ce65bb5575c264593267a033a0d7ffb1eef5d9d53bbc2f3"}
    for task, digest in expected.items():
        text = verbatim("dsg", task)
        assert hashlib.sha256(text.encode()).hexdigest() == digest, task
        assert text.count("\ninput: ") == 24 and text.endswith("\n\ninput: {input}\noutput: ")  # 23 examples, then ours
    assert verbatim("dsg", "vqa") == ("Answer only with 'yes' or 'no'. Do not give other outputs or punctuation "
                                      "marks. Question: {question}")


def test_a_request_is_one_user_message_with_the_prompt_and_its_tuples():
    request = dsg_request("question", PROMPT + "\n" + TUPLES, None)
    assert len(request.messages) == 1 and request.messages[0].role == "user"
    assert request.messages[0].text.endswith(f"input: {PROMPT}\n{TUPLES}\noutput: ")


# -- reading the LLM's output ----------------------------------------------------------------------------------

def test_the_authors_output_format_is_read():
    assert parse_tuples(TUPLES)[3] == (4, "attribute - color (shirt, black white and blue)")
    assert parse_questions(QUESTIONS, [1, 2, 3, 4, 5])[4] == "Is the shirt black, white, and blue?"
    assert parse_dependencies(DEPENDENCIES, [1, 2, 3, 4, 5]) == {1: [0], 2: [0], 3: [0], 4: [3], 5: [1]}
    # the model repeating "output:" and going on with another example, as query_utils cuts it
    assert output_text("output: 1 | entity - whole (cat)\n\ninput: a dog\noutput: 1 | x") == "1 | entity - whole (cat)"
    assert parse_tuples("output: 1 | entity - whole (cat)\n\ninput: a dog\noutput: 1 | x") == [(1, "entity - whole (cat)")]


def test_dependency_cells_are_cleaned_as_parse_utils_cleans_them():
    assert clean_parents("5, background") == [5]  # a word dropped
    assert clean_parents("0, 2") == [2] and clean_parents("0") == [0] and clean_parents("1,2") == [1, 2]
    with pytest.raises(ReplyParseError, match="hold no id"):
        clean_parents("background")


@pytest.mark.parametrize("text, ids, match", [
    ("1 entity - whole (cat)", None, "is not 'id | tuple'"),
    ("1 | a | b", None, "is not 'id | tuple'"),
    ("one | entity - whole (cat)", None, "does not start with an id"),
    ("1 | a\n1 | b", None, "id 1 is given twice"),
    ("1 |  ", None, "id 1 has no tuple"),
    ("", None, "no 'id | tuple' line"),
])
def test_malformed_tuples_are_refused(text, ids, match):
    with pytest.raises(ReplyParseError, match=match):
        parse_tuples(text)


def test_questions_and_dependencies_must_cover_the_tuples():
    with pytest.raises(ReplyParseError, match=r"no question for tuple\(s\) \[3\]"):
        parse_questions("1 | Is there a cat?\n2 | Is it red?", [1, 2, 3])
    with pytest.raises(ReplyParseError, match=r"which are no tuples"):
        parse_questions("1 | a?\n2 | b?\n4 | c?", [1, 2])
    with pytest.raises(ReplyParseError, match=r"tuple 2's parent\(s\) \[7\] are no tuples"):
        parse_dependencies("1 | 0\n2 | 7", [1, 2])
    assert parse_dependencies("1 | 0\n2 | 1, 2", [1, 2]) == {1: [0], 2: [1, 2]}  # its own parent: as released


def test_categories_are_the_authors_groups():
    assert [category_of(t) for t in ("entity - whole (cat)", "attribute - color (cat, red)", "other - count (x, ==2)",
                                     "relation - spatial (a, b, on)", "action - (cat, run)", "global - (photo)")] == [
        "entity", "attribute", "attribute", "relation", "relation", "global"]


# -- the dependency rule ---------------------------------------------------------------------------------------

CHAIN = [{"id": 1, "dependencies": [0]}, {"id": 2, "dependencies": [1]}, {"id": 3, "dependencies": [2]},
         {"id": 4, "dependencies": [0]}]


@pytest.mark.parametrize("rule, expected, zeroed", [
    ("paper", {1: 1.0, 2: 0.0, 3: 0.0, 4: 0.0}, {3}),     # 3 fails with its grandparent's... parent 2's "no"
    ("official", {1: 1.0, 2: 0.0, 3: 0.0, 4: 0.0}, {3}),
    ("none", {1: 1.0, 2: 0.0, 3: 1.0, 4: 0.0}, set()),
])
def test_a_question_whose_parent_is_answered_no_fails(rule, expected, zeroed):
    scores, got = question_scores(CHAIN, {1: True, 2: False, 3: True, 4: False}, rule)
    assert scores == expected and got == zeroed


def test_the_paper_rule_fails_a_question_with_any_ancestor_answered_no_the_official_only_with_a_parent():
    answers = {1: False, 2: True, 3: True, 4: True}
    assert question_scores(CHAIN, answers, "paper")[0] == {1: 0.0, 2: 0.0, 3: 0.0, 4: 1.0}
    # calc_vqa_score reads the parents' own answers: 3's parent 2 said yes
    assert question_scores(CHAIN, answers, "official")[0] == {1: 0.0, 2: 0.0, 3: 1.0, 4: 1.0}


def test_a_question_never_hangs_on_itself():
    questions = [{"id": 1, "dependencies": [0]}, {"id": 2, "dependencies": [1, 2]},
                 {"id": 3, "dependencies": [4]}, {"id": 4, "dependencies": [3]}]  # a cycle, as DSG-1k has
    for rule in ("paper", "official"):
        assert question_scores(questions, {1: True, 2: True, 3: True, 4: True}, rule)[0] == dict.fromkeys(range(1, 5), 1.0)
        assert question_scores(questions, {1: True, 2: True, 3: False, 4: True}, rule)[0][4] == 0.0


def test_missing_answers_leave_a_score_unknown_unless_a_parent_failed():
    scores, _ = question_scores(CHAIN, {1: None, 2: True, 3: True, 4: True}, "paper")
    assert scores == {1: None, 2: None, 3: None, 4: 1.0}
    scores, _ = question_scores(CHAIN, {1: False, 2: None, 3: None, 4: True}, "paper")
    assert scores == {1: 0.0, 2: 0.0, 3: 0.0, 4: 1.0}
    with pytest.raises(ValueError, match=r"name question\(s\) \[9\]"):
        question_scores([{"id": 1, "dependencies": [9]}], {1: True})


# -- scoring ---------------------------------------------------------------------------------------------------

def test_an_image_is_scored_by_the_share_of_questions_that_hold(tmp_path):
    scripted = judge({"Is there a shirt?": "No.", "Is the baby sleeping?": "Yes!"})
    dsg = DSG(store=tmp_path / "q.sqlite")
    [result] = dsg.score([PROMPT], [image()], scripted)
    # 3 answered no, so 4 (its child) fails too: 3 of 5 hold
    assert result.score == pytest.approx(3 / 5) and result.failure is None
    assert result.subscores == {"without_dependency": pytest.approx(4 / 5), "questions": 5.0}
    assert [q.score for q in result.questions] == [1.0, 1.0, 0.0, 0.0, 1.0]
    assert [q.reasoning for q in result.questions] == ["yes", "yes", "no", "yes", "yes"]
    assert result.questions[3].criterion == "attribute - color (shirt, black white and blue)"
    assert result.questions[3].group == "attribute" and result.context["zeroed_by_a_parent"] == [4]
    assert result.replies == ["yes", "yes", "No.", "yes", "Yes!"]
    vqa = [r for r in scripted.requests if task_of(r) == "vqa"]
    assert [type(p).__name__ for p in vqa[0].messages[0].content] == ["str", "JudgeImage"]  # text, then image
    aggregate = dsg.aggregate([result])
    assert aggregate["dsg"] == pytest.approx(60.0) and aggregate["by_category"] == {
        "attribute": 50.0, "entity": pytest.approx(200 / 3)}


def test_questions_are_made_once_per_prompt_and_kept(tmp_path):
    store = tmp_path / "criteria.sqlite"
    scripted = judge()
    dsg = DSG(store=store)
    dsg.score([PROMPT, PROMPT], [image(), image("red")], scripted)
    made = [task_of(r) for r in scripted.requests if task_of(r) != "vqa"]
    assert made == ["tuple", "question", "dependency"]  # once for the two images of one prompt
    # another object, another process: read from the store, nothing asked but the answers
    again = judge()
    [result] = DSG(store=store).score([{"id": "p1", "prompt": PROMPT}], [image()], again)
    assert all(task_of(r) == "vqa" for r in again.requests) and result.id == "p1" and result.score == 1.0
    # another LLM writes other questions: a key of its own
    other = ScriptedJudge(replies(), model="another-llm")
    DSG(store=store).score([PROMPT], [image()], other)
    assert [task_of(r) for r in other.requests][:3] == ["tuple", "question", "dependency"]


def test_a_malformed_llm_reply_is_re_asked_then_the_prompt_fails_once_with_its_replies_kept(tmp_path):
    tuples = iter(["Sure! Here are the tuples: baby, mattress", TUPLES])

    def once_wrong(request):
        return next(tuples) if task_of(request) == "tuple" else replies()(request)

    scripted = ScriptedJudge(once_wrong)
    dsg = DSG(store=tmp_path / "q.sqlite")
    [result] = dsg.score([PROMPT], [image()], scripted)
    assert result.score == 1.0
    reask = [r for r in scripted.requests if task_of(r) == "tuple"][1]
    assert "could not be used" in reask.messages[-1].text and "is not 'id | tuple'" in reask.messages[-1].text

    never = judge(tuples="I cannot do that.")
    [failed] = DSG(store=tmp_path / "q2.sqlite").score([PROMPT], [image()], never)
    assert failed.score is None and failed.failure.startswith("DSG tuples: unparsable reply")
    assert sum(task_of(r) == "tuple" for r in never.requests) == 3  # asked, re-asked twice
    assert not any(task_of(r) == "vqa" for r in never.requests)  # no question, nothing asked about the image
    assert failed.replies == ["I cannot do that."] * 3  # every raw reply of the failed step kept
    assert failed.context["questions_failed"] == "now" and not failed.retryable
    # the failure is recorded once: a later evaluation (another object, another process) reads it, asks nothing
    again = judge()
    [still] = DSG(store=tmp_path / "q2.sqlite").score([PROMPT], [image()], again)
    assert again.requests == [] and still.score is None and still.replies == ["I cannot do that."] * 3
    assert still.failure.startswith("DSG tuples: unparsable reply") and "not asked again" in still.failure
    assert still.context["questions_failed"] == "recorded"
    # asked again only when told to (evaluate --retry-failed); what it makes then replaces the failure
    [scored] = DSG(store=tmp_path / "q2.sqlite").score([PROMPT], [image()], again, retry_failed=True)
    assert scored.score == 1.0 and task_of(again.requests[0]) == "tuple"
    later = judge()
    [kept] = DSG(store=tmp_path / "q2.sqlite").score([PROMPT], [image()], later)
    assert kept.score == 1.0 and all(task_of(r) == "vqa" for r in later.requests)


def test_a_question_with_no_yes_or_no_is_re_asked_then_fails_the_image_never_a_zero(tmp_path):
    scripted = judge({"Is there a mattress?": "It is hard to say."})
    [result] = DSG(store=False).score([PROMPT], [image()], scripted)
    assert result.score is None and "question 2 ('Is there a mattress?')" in result.failure
    assert "is not one of 'yes', 'no'" in result.failure
    assert result.questions[1].score is None and result.reasks == 2
    assert result.replies.count("It is hard to say.") == 3  # every raw reply kept


def test_an_unanswered_question_under_a_failed_parent_is_zero_anyway():
    scripted = judge({"Is there a shirt?": "no", "Is the shirt black, white, and blue?": "perhaps"})
    [result] = DSG(store=False).score([PROMPT], [image()], scripted, max_reasks=0)
    assert result.failure is None and result.score == pytest.approx(3 / 5)
    assert result.subscores["without_dependency"] is None  # its own answer is unknown


def test_a_judge_that_could_not_answer_is_a_retryable_failure():
    def reply(request):
        if task_of(request) == "vqa":
            return Reply(text="", model="m", sampling={}, error="HTTP 503", transient=True)
        return replies()(request)

    [result] = DSG(store=False).score([PROMPT], [image()], ScriptedJudge(reply))
    assert result.score is None and result.retryable and "judge error: HTTP 503" in result.failure


def test_answers_by_probability_take_the_likelier_of_yes_and_no():
    def probability(query):
        assert query.question.startswith("Answer only with 'yes' or 'no'.")
        yes = "shirt" not in query.question
        return (0.7 if yes else 0.2) if query.answer == "yes" else (0.2 if yes else 0.6)

    llm = judge()
    scripted = ScriptedJudge(probabilities=probability)
    dsg = DSG(llm, store=False)
    [result] = dsg.score([PROMPT], [image()], scripted, answers="probability")
    assert [q.reasoning for q in result.questions] == ["yes", "yes", "no", "no", "yes"]
    assert result.score == pytest.approx(3 / 5) and result.context["probabilities"]["3"] == {"yes": 0.2, "no": 0.6}
    assert {q.answer for q in scripted.queries} == {"yes", "no"} and not scripted.requests
    assert not any(task_of(r) == "vqa" for r in llm.requests)  # the LLM only wrote the questions


def test_an_unreadable_image_fails_unasked(tmp_path):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not a png")
    scripted = judge()
    results = DSG(store=False).score([PROMPT, PROMPT], [str(bad), image()], scripted)
    assert results[0].score is None and results[0].failure.startswith("image:") and results[0].image == str(bad)
    assert results[1].score == 1.0
    assert sum(task_of(r) == "vqa" for r in scripted.requests) == 5


def test_given_questions_are_scored_as_given_and_a_benchmark_rows_questions_are_not_read():
    given = [{"id": 1, "tuple": "entity - whole (cat)", "question": "Is there a cat?", "dependencies": [0]}]
    scripted = judge()
    [result] = DSG(store=False).score([{"id": "x", "prompt": "a cat", "dsg_questions": given}], [image()], scripted)
    assert result.score == 1.0 and [q.group for q in result.questions] == ["entity"]
    assert all(task_of(r) == "vqa" for r in scripted.requests)
    r2i_row = {"id": "r", "prompt": PROMPT, "questions": [{"question": "Is it reasoned?", "criterion": "1 or 0"}]}
    made = judge()
    [result] = DSG(store=False).score([r2i_row], [image()], made)
    assert len(result.questions) == 5 and task_of(made.requests[0]) == "tuple"


def test_options_and_inputs_are_checked_before_anything_is_asked():
    from t2ireason.scoring import check_setting

    dsg = get_baseline("dsg", store=False)
    with pytest.raises(TypeError, match=r"unknown dsg option\(s\) \['dependencies'\]"):
        dsg.score([], [], ScriptedJudge([]), dependencies="paper")
    with pytest.raises(ValueError, match="dependency must be one of paper, official, none"):
        dsg.score([PROMPT], [image()], ScriptedJudge([]), dependency="strict")
    with pytest.raises(ValueError, match="answers must be one of chat, probability"):
        dsg.score([PROMPT], [image()], ScriptedJudge([]), answers="logits")
    with pytest.raises(ValueError, match="got 2 prompts but 1 images"):
        dsg.score([PROMPT, PROMPT], [image()], ScriptedJudge([]))
    with pytest.raises(ValueError, match=r"rows\[0\] is a dict without a string 'prompt'"):
        dsg.score([{"text": PROMPT}], [image()], ScriptedJudge([]))
    setting = dsg.setting("official")
    assert setting.judge == "openai:gpt-4o" and setting.options == {"dependency": "official", "other_answers": "no"}
    assert setting.judge_kwargs["sampling"].temperature == 1.0 and setting.judge_kwargs["sampling"].max_tokens == 20
    check_setting(dsg, setting)  # the preset's own options pass the benchmark checks
    with pytest.raises(ValueError, match="unknown preset 'gpt' for dsg"):
        dsg.setting("gpt")
    with pytest.raises(ValueError, match="unknown dsg option"):
        check_setting(dsg, dsg.setting(options={"rule": "paper"}))


def test_score_images_is_the_plain_function():
    [result] = score_images("dsg", [image()], [PROMPT], judge(), store=False, options={"dependency": "none"})
    assert result.score == 1.0 and result.context["dependency_rule"] == "none"
    with pytest.raises(ValueError, match="unknown baseline metric 'dgs'; known: dsg, viescore, tifa"):
        get_baseline("dgs")


def test_an_llm_that_could_not_answer_fails_the_images_retryably_and_is_asked_again(tmp_path):
    def down(request):
        if task_of(request) == "tuple":
            return Reply(text="", model="m", sampling={}, error="HTTP 502", transient=True)
        return replies()(request)

    [result] = DSG(store=tmp_path / "q.sqlite").score([PROMPT], [image()], ScriptedJudge(down))
    assert result.score is None and result.retryable
    assert result.failure.startswith("DSG tuples: judge error: HTTP 502") and "asking again may succeed" in result.failure
    [result] = DSG(store=tmp_path / "q.sqlite").score([PROMPT], [image()], judge())
    assert result.score == 1.0
    [never] = DSG(store=False).score([PROMPT], [image()], judge(tuples="no tuples"))
    assert not never.retryable  # a reply that never parses: asking again the same would not change it


def test_the_question_llm_is_the_one_named_else_the_judge_named_else_the_presets():
    from t2ireason.baselines import load_baseline

    assert load_baseline("dsg", store=False).questions.spec == "openai:gpt-3.5-turbo"
    named = load_baseline("dsg", judge="openai:gpt-4o", store=False).questions
    assert named.spec is None and named.llm is None  # the judge writes them
    own = load_baseline("dsg", judge="openai:gpt-4o", llm="openai:gpt-4.1", llm_kwargs={"timeout": 30},
                        store=False).questions
    assert own.spec == "openai:gpt-4.1" and own.llm_kwargs == {"timeout": 30} and own._loaded is None
    with pytest.raises(ValueError, match="viescore asks no LLM for questions"):
        load_baseline("viescore", llm="openai:gpt-4o")


# -- issue 50: a runaway LLM, a missing parent, the pseudocode's order -------------------------------------------

def test_an_llm_that_writes_hundreds_of_tuples_is_capped_and_the_cut_is_said(tmp_path):
    from t2ireason.baselines.dsg import MAX_QUESTIONS

    n = 500
    many = judge(tuples="\n".join(f"{i} | entity - whole (thing{i})" for i in range(1, n + 1)),
                 dependencies="\n".join(f"{i} | {0 if i == 1 else 1 if i < MAX_QUESTIONS + 5 else i - 1}"
                                        for i in range(1, n + 1)),
                 questions="\n".join(f"{i} | Is there thing {i}?" for i in range(1, n + 1)))
    [result] = DSG(store=tmp_path / "q.sqlite").score([PROMPT], [image()], many)
    assert sum(task_of(r) == "vqa" for r in many.requests) == MAX_QUESTIONS == 64  # not 500 judge requests
    assert result.score == 1.0 and len(result.questions) == MAX_QUESTIONS
    cut = result.context["questions_cut"]
    assert cut["written"] == n and cut["kept"] == MAX_QUESTIONS and "at most 52" in cut["note"]
    assert all(q["dependencies"] == [0] or max(q["dependencies"]) <= MAX_QUESTIONS
               for q in result.context["dependencies"].values() for q in [{"dependencies": q}])


def _item(i, ids, parents):
    return {"id": f"item{i}", "prompt": f"a red cube number {i}",
            "dsg_questions": [{"id": q, "tuple": f"entity - whole (thing{q})", "question": f"Is there a thing {q}?",
                               "dependencies": parents.get(q, [0])} for q in ids]}


@pytest.mark.parametrize("rule", ["official", "paper", "none"])
def test_an_item_naming_a_missing_parent_is_scored_by_its_rule_and_the_others_score(rule):
    """DSG-1k's tifa160_134 has no question 1, which its other questions name: the whole call raised after every
    question was asked. Now the official rule scores it 0 unasked (what the authors' script gives it), the
    paper's fails that image alone, unasked, and ``none`` reads no dependency."""
    rows = [_item(0, [1, 2], {2: [1]}), _item(1, [2, 3, 4], {2: [1], 3: [1], 4: [2]}), _item(2, [1], {})]
    scripted = judge()
    results = DSG(store=False).score(rows, [image()] * 3, scripted, dependency=rule)
    assert results[0].score == results[2].score == 1.0
    broken = results[1]
    asked = sum(task_of(r) == "vqa" for r in scripted.requests)
    if rule == "none":
        assert broken.score == 1.0 and asked == 6
        return
    assert asked == 3 and broken.context["missing_parents"] == [1]  # nothing paid for the broken item
    if rule == "official":
        assert broken.score == 0.0 and broken.failure is None and "scored 0" in broken.context["note"]
    else:
        assert broken.score is None and "parent(s) [1], which are not among its 3 questions" in broken.failure


def test_the_paper_rule_follows_the_pseudocode_in_the_questions_order():
    """The README's pseudocode zeroes in place, in the listed order: a child listed before its parent sees the
    parent's own answer (3 of DSG-1k's 5,085 scored images), one listed after it the parent's zeroed state."""
    child_first = [{"id": 3, "dependencies": [2]}, {"id": 1, "dependencies": [0]}, {"id": 2, "dependencies": [1]}]
    answers = {1: False, 2: True, 3: True}
    assert question_scores(child_first, answers, "paper")[0] == {3: 1.0, 1: 0.0, 2: 0.0}
    assert question_scores(list(reversed(child_first)), answers, "paper")[0] == {2: 0.0, 1: 0.0, 3: 0.0}


def test_the_official_preset_counts_an_answer_that_is_not_yes_a_no_as_the_authors_code_does():
    scripted = judge({"Is there a mattress?": "It is hard to say.", "Is there a shirt?": "No."})
    dsg = DSG(store=False)
    [authors] = dsg.score([PROMPT], [image()], scripted, **dsg.setting("official").options)
    assert authors.score == pytest.approx(2 / 5) and authors.failure is None and authors.reasks == 0
    assert authors.context["read_as_no"] == [2]  # said: the reply was neither
    [ours] = dsg.score([PROMPT], [image()], judge({"Is there a mattress?": "It is hard to say."}))
    assert ours.score is None and ours.reasks == 2  # the default: re-asked, then the question's failure
    with pytest.raises(ValueError, match="other_answers must be one of fail, no"):
        dsg.score([PROMPT], [image()], scripted, other_answers="maybe")


@pytest.mark.parametrize("metric, preset", [("dsg", "official"), ("viescore", "paper"), ("viescore", "official")])
def test_the_presets_that_copy_the_authors_calls_send_only_max_tokens(metric, preset):
    """dsg/vqa_utils.py's GPT4o and VIEScore's mllm_tools/openai.py send max_tokens and nothing else: the
    API's defaults (temperature 1, top_p 1) stand, unsent, as the cards say."""
    from t2ireason.judges import ChatRequest, load_judge

    setting = get_baseline(metric, **({"store": False} if metric == "dsg" else {})).setting(preset)
    judge = load_judge(f"{setting.judge}@http://127.0.0.1:9/v1", api_key="k", **setting.judge_kwargs)
    request = ChatRequest.simple("Is there a cat?", image())
    fields = judge._request_fields(request, judge.resolve_sampling(request), False)
    sent = {k for k in fields if k not in ("model",)}
    assert sent == {judge.max_tokens_param} and fields[judge.max_tokens_param] == setting.judge_kwargs["sampling"].max_tokens


def test_a_failed_dependency_step_is_named_in_plain_english():
    [failed] = DSG(store=False).score([PROMPT], [image()], judge(dependencies="no parents here"), max_reasks=0)
    assert failed.failure.startswith("DSG dependencies: unparsable reply")  # was "DSG dependencys"
