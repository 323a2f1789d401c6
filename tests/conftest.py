"""Test-wide setup: no hub, a private HF_HOME, tiny models built once per session."""

import os
import shutil
import tempfile

# Before anything imports huggingface_hub: never reach a hub, never touch the user's cache.
_HOME = tempfile.mkdtemp(prefix="t2ireason-hfhome-")
os.environ.update(
    HF_HUB_OFFLINE="1",
    HF_DATASETS_OFFLINE="1",
    TRANSFORMERS_OFFLINE="1",
    HF_HUB_DISABLE_TELEMETRY="1",
    HF_HOME=_HOME,
    HF_DATASETS_CACHE=os.path.join(_HOME, "datasets"),
    TOKENIZERS_PARALLELISM="false",
)
for key in ("OPENAI_API_KEY", "GEMINI_API_KEY", "HF_TOKEN"):
    os.environ.pop(key, None)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """Folders of tiny random models saved with save_pretrained (see t2ireason.testing)."""
    from t2ireason import testing

    return testing.build_all(tmp_path_factory.mktemp("tiny-models"))


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Debian's Chromium, headless, with nothing reaching for the network (see ../shared/testing.md)
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-quic"]


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium driven by playwright, for the HTML reports."""
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture
def sigint_raises():
    """Ctrl-C raises KeyboardInterrupt in this test however the suite was started: a process launched in the
    background by a shell without job control (`cmd &` in a script, as CI runners may) starts with SIGINT ignored,
    and a test that sends it would then wait for ever."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
