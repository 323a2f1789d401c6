"""Fuzzing what an OpenAI-compatible server sends back for answer probabilities (vqascore's
path through ``openai:``): whatever the completion holds, it becomes a reply with checked
log-probabilities or a malformed-reply failure, and an answer probability is always in [0, 1]
or a clear JudgeError; never a crash, never a probability outside [0, 1] (issue 16)."""

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t2ireason.judges import JudgeError, Sampling
from t2ireason.judges.openai_judge import OpenAIJudge, answer_logprob
from t2ireason.transport import Malformed as _Malformed

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                     max_leaves=8)
_LOGPROB = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.none(), st.booleans(),
                     st.text(max_size=4), st.just(-math.inf), st.just(-0.0))
_TOKEN = st.one_of(st.sampled_from(["Yes", " Yes", "Yes\n", "yes", "No", "Y", "", " "]), st.text(max_size=4),
                   st.integers(), st.none())
_ALTERNATIVE = st.one_of(st.fixed_dictionaries({"token": _TOKEN, "logprob": _LOGPROB}), _JSON)
_STEP = st.one_of(st.fixed_dictionaries({"token": _TOKEN, "logprob": _LOGPROB,
                                         "top_logprobs": st.one_of(st.lists(_ALTERNATIVE, max_size=5), _JSON)}), _JSON)
_COMPLETION = st.fixed_dictionaries({
    "choices": st.one_of(st.lists(st.fixed_dictionaries({
        "message": st.one_of(st.fixed_dictionaries({"content": st.one_of(st.text(max_size=4), st.none(), _JSON)}),
                             _JSON),
        "logprobs": st.one_of(st.fixed_dictionaries({"content": st.one_of(st.lists(_STEP, max_size=2), _JSON)}),
                              _JSON),
        "finish_reason": st.one_of(st.none(), st.text(max_size=6))}), max_size=2), _JSON),
    "usage": _JSON})

_judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", check=False)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_COMPLETION)
def test_any_completion_becomes_a_checked_reply_or_a_malformed_failure(completion):
    try:
        reply = _judge._to_reply(completion, Sampling())
    except _Malformed as e:
        assert "not a chat completion" in str(e)
        return
    assert isinstance(reply.text, str)
    for step in reply.logprobs or []:
        values = [step.logprob, *step.top.values()]
        assert isinstance(step.token, str) and all(isinstance(t, str) for t in step.top)
        assert all(isinstance(v, float) and not math.isnan(v) and v <= 0.0 for v in values)
        try:
            lp = answer_logprob(step.top, "Yes")
        except JudgeError as e:
            assert "span several tokens" in str(e)
            continue
        assert 0.0 <= math.exp(lp) <= 1.0


def test_alternatives_that_decode_alike_never_add_up_past_one():
    assert answer_logprob({"Yes": -0.1, " Yes": -0.1}, "Yes") == 0.0
    assert answer_logprob({"Yes": -math.inf}, "Yes") == -math.inf  # P = 0, not a math domain error
    assert answer_logprob({"No": -0.01}, "Yes") == -math.inf
