# Two commands do all the set-up on a fresh machine:
#   make demo   - the offline end-to-end demo (tiny local models, shipped samples)
#   make test   - install everything the tests need, then run them
# TORCH_SPEC picks the torch build installed first, TORCH_INDEX where pip finds it, e.g. a CUDA build:
#   make TORCH_SPEC=torch==2.13.0 TORCH_INDEX=https://download.pytorch.org/whl/cu128 demo

PYTHON     ?= python3
VENV       ?= .venv
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
EXTRAS     ?= openai,text,test,dev
PY         := $(VENV)/bin/python
STAMP      := $(VENV)/.installed-$(shell echo "$(TORCH_SPEC) $(TORCH_INDEX) $(EXTRAS)" | cksum | cut -d' ' -f1)
PYTEST_ARGS ?=

# Tests and the demo never reach a model or dataset hub.
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1

.PHONY: install test demo lint perf browser clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): setup.cfg pyproject.toml | $(PY)
	$(PY) -m pip install --quiet "$(TORCH_SPEC)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the HTML report's browser tests (playwright's own download cannot work offline).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: install browser
	$(OFFLINE) $(PY) -m pytest $(PYTEST_ARGS)

demo: install
	$(OFFLINE) $(PY) -m t2ireason.demo

lint: install
	$(VENV)/bin/ruff check .

perf: install
	@for script in judges metrics generate build engine; do echo "== perf/$$script.py"; $(OFFLINE) $(PY) perf/$$script.py || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info demo_output
