"""Judge spec strings (``backend:model[@base_url]``) and what ``load_judge`` accepts."""

import pytest

from t2ireason.judges import BACKENDS, JudgeError, load_judge, parse_spec
from t2ireason.judges.cache import CachedJudge
from t2ireason.judges.scripted import ScriptedJudge


@pytest.mark.parametrize("spec, expected", [
    ("openai:gpt-4.1", ("openai", "gpt-4.1", None)),
    ("openai:gpt-4.1-2025-04-14", ("openai", "gpt-4.1-2025-04-14", None)),
    ("openai:Qwen/Qwen2.5-VL-72B-Instruct@http://localhost:8000/v1",
     ("openai", "Qwen/Qwen2.5-VL-72B-Instruct", "http://localhost:8000/v1")),
    ("openai:gemini-2.5-pro@https://generativelanguage.googleapis.com/v1beta/openai/",
     ("openai", "gemini-2.5-pro", "https://generativelanguage.googleapis.com/v1beta/openai/")),
    ("hf:Qwen/Qwen2.5-VL-7B-Instruct", ("hf", "Qwen/Qwen2.5-VL-7B-Instruct", None)),
    ("hf:/models/tiny judge@v2", ("hf", "/models/tiny judge@v2", None)),  # only openai specs carry a URL
    ("vllm:Qwen/Qwen2.5-VL-72B-Instruct", ("vllm", "Qwen/Qwen2.5-VL-72B-Instruct", None)),
])
def test_parse_spec(spec, expected):
    assert parse_spec(spec) == expected


@pytest.mark.parametrize("spec, message", [
    ("gpt-4.1", "must look like 'backend:model' with a backend among hf, openai, vllm"),
    ("anthropic:claude", "unknown judge backend 'anthropic'"),
    ("hf:", "names no model"),
    ("openai:@http://localhost:8000/v1", "names no model"),
])
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(JudgeError, match=message):
        parse_spec(spec)


def test_every_backend_is_importable_lazily():
    import importlib

    for backend, target in BACKENDS.items():
        module, cls = target.split(":")
        assert hasattr(importlib.import_module(module), cls), backend


def test_load_judge_takes_spec_strings_and_objects(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    judge = load_judge("openai:my-model@http://127.0.0.1:9/v1", max_concurrency=3)
    assert (judge.model, judge.base_url, judge.max_concurrency) == ("my-model", "http://127.0.0.1:9/v1", 3)
    judge.close()
    scripted = ScriptedJudge(["ok"])
    assert load_judge(scripted) is scripted  # any object with chat() and identity()
    cached = load_judge(scripted, cache=tmp_path / "c.sqlite")
    assert isinstance(cached, CachedJudge) and cached.judge is scripted and cached.path == tmp_path / "c.sqlite"
    with pytest.raises(JudgeError, match="a judge is a spec string or an object with chat"):
        load_judge(42)


def test_validate_judge_names_what_is_wrong_before_anything_loads(tmp_path):
    from t2ireason.judges import JudgeError, validate_judge

    with pytest.raises(JudgeError, match=r"did you mean 'openai:gpt-4o'"):
        validate_judge("openai-gpt-4o")
    with pytest.raises(JudgeError, match=r"unknown judge backend 'opena'.*did you mean 'openai'"):
        validate_judge("opena:gpt-4o")
    with pytest.raises(JudgeError, match="does not exist"):
        validate_judge(f"hf:{tmp_path / 'nonexistent'}")
    (tmp_path / "file").write_text("x")
    with pytest.raises(JudgeError, match="is a file"):
        validate_judge(f"hf:{tmp_path / 'file'}")
    with pytest.raises(JudgeError, match=r"takes no option 'max_concurency'.*did you mean 'max_concurrency'"):
        validate_judge("openai:m@http://127.0.0.1:1/v1", {"max_concurency": 4})
    validate_judge("openai:m@http://127.0.0.1:1/v1", {"max_concurrency": 4})  # nothing is contacted
    validate_judge(f"hf:{tmp_path}", {"dtype": "float32"})


@pytest.mark.parametrize("kwargs, message", [
    ({"sampling": {"temprature": 0.2}}, r"sampling has no field 'temprature' \(did you mean 'temperature'\?\)"),
    ({"sampling": {"temperature": "hot"}}, "sampling.temperature must be a finite number, got 'hot'"),
    ({"sampling": {"max_tokens": 1.5}}, "sampling.max_tokens must be a whole number, got 1.5"),
    ({"sampling": {"top_p": float("nan")}}, "sampling.top_p must be a finite number, got nan"),
    ({"sampling": {"temperature": -1}}, "temperature must be >= 0"),
    ({"sampling": "greedy"}, "sampling must be an object of temperature, top_p, max_tokens, seed"),
    ({"timeout": "60"}, "the openai judge's timeout must be a number of seconds > 0, got '60'"),
    ({"max_retries": -1}, "max_retries must be a whole number >= 0"),
    ({"base_url": "localhost:8000/v1"}, "is not an http"),
])
def test_validate_judge_checks_option_values_before_anything_is_made(kwargs, message):
    """A wrong-typed sampling value or option was a Python traceback once scoring had begun."""
    from t2ireason.judges import validate_judge

    with pytest.raises(JudgeError, match=message):
        validate_judge("openai:m@http://127.0.0.1:1/v1", kwargs)


def test_validate_judge_accepts_what_works():
    from t2ireason.judges import Sampling, validate_judge

    validate_judge("openai:m@https://example.org/v1", {
        "sampling": {"temperature": 0.1, "max_tokens": 64, "seed": None}, "timeout": 30, "deadline": 120.5,
        "max_retry_after": 0, "max_reply_bytes": 1 << 20, "on_unavailable": "record", "check": False,
        "image_format": "jpg", "structured_output": "auto"})
    validate_judge("openai:gpt-4.1", {"sampling": Sampling(temperature=0.3)})


def test_a_base_url_with_user_and_password_starts_at_the_first_at_before_its_scheme():
    """openai:m@http://user:pass@host/v1 was split at its last '@', inside the URL (issue 35 item 10)."""
    from t2ireason.judges import JudgeSpec, validate_judge

    spec = JudgeSpec.parse("openai:m@http://user:pw-SECRET@127.0.0.1:8000/v1")
    assert (spec.backend, spec.model, spec.base_url) == ("openai", "m", "http://user:pw-SECRET@127.0.0.1:8000/v1")
    assert parse_spec("openai:org/m@2024@HTTPS://u:pw@host/v1") == ("openai", "org/m@2024", "HTTPS://u:pw@host/v1")
    assert parse_spec("openai:m@rev@host/v1") == ("openai", "m@rev", "host/v1")  # no scheme: the last '@'
    assert "pw-SECRET" not in repr(spec) + str(spec) + spec.describe()
    assert spec.describe() == "openai:m@http://***@127.0.0.1:8000/v1"
    assert JudgeSpec.of(spec) is spec and JudgeSpec.of(spec.text) == spec
    with pytest.raises(JudgeError, match=r"it has no host.*what follows the first '@' followed by http:// or "
                                         r"https:// is the base URL") as info:
        validate_judge("openai:m@http://user:pw-SECRET@")
    assert "pw-SECRET" not in str(info.value)


def test_a_parsed_spec_says_what_its_backend_takes_and_where_its_model_runs(tmp_path):
    from t2ireason.judges import JudgeSpec

    served = JudgeSpec.parse("openai:m@http://127.0.0.1:9/v1")
    assert not served.is_local() and served.local_folder() is None
    assert served.options() == {"base_url": "http://127.0.0.1:9/v1"}
    assert {"timeout", "max_concurrency", "api_key"} <= served.backend_options()
    local = JudgeSpec.parse(f"hf:{tmp_path}")
    assert local.is_local() and local.local_folder() == tmp_path and local.options() == {}
    assert "dtype" in local.backend_options()
    hub = JudgeSpec.parse("vllm:Qwen/Qwen2.5-VL-7B-Instruct")
    assert hub.is_local() and hub.local_folder() is None


def test_a_judge_spec_is_parsed_once_from_the_setting_to_the_judge_asked(monkeypatch):
    """The scoring setting, its checks, the preset's handling, load_judge and the pre-flight read one parsed
    value: the spec's text is split once."""
    from t2ireason.benchmarks import get_benchmark
    from t2ireason.judges import JudgeSpec, preflight_spec
    from t2ireason.judges.spec import judge_setting
    from t2ireason.scoring import check_setting
    from t2ireason.testing_http import serve

    parsed = []
    parse = JudgeSpec.parse.__func__
    monkeypatch.setattr(JudgeSpec, "parse", classmethod(lambda cls, text: (parsed.append(text), parse(cls, text))[1]))
    bench = get_benchmark("r2i-bench")
    with serve('{"ok": true}') as server:
        spec = f"openai:test-model@{server.base_url}"
        setting = judge_setting(bench, "paper", spec, {"api_key": "sk-test-0123456789"})
        check_setting(bench, setting)
        with load_judge(setting.loadable, cache=False, **setting.judge_kwargs) as judge:
            preflight_spec(setting.loadable, setting.judge_kwargs, judge=judge, structured=True)
    assert parsed.count(spec) == 1 and judge.base_url == server.base_url
    assert len(server.requests) == 1  # the pre-flight's one request, to the spec's URL
