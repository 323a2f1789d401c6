# Two commands do all the set-up on a fresh machine:
#   make demo   - the offline end-to-end demo (tiny local models, shipped samples)
#   make test   - install everything the tests need, then run them
# TORCH_SPEC picks the torch build installed first, TORCH_INDEX where pip finds it, e.g. a CUDA build:
#   make TORCH_SPEC=torch==2.13.0 TORCH_INDEX=https://download.pytorch.org/whl/cu128 demo
# TORCHVISION_SPEC installs a torchvision beside it, from the same index: it must be the release built for that
# torch (0.N+15 for torch 2.N), or it breaks transformers' processors. Qwen2/2.5/3-VL and SmolVLM2 judges need it:
#   make TORCH_SPEC=torch==2.14.1 TORCHVISION_SPEC=torchvision==0.29.1 install
# `make vision` builds a second environment (.venv-vision) with such a pair for the tests of those families
# (pytest mark `torchvision`); `make test` runs them there. This machine's CPU torch 2.13.0 has no torchvision.

PYTHON     ?= python3
VENV       ?= .venv
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
TORCHVISION_SPEC ?=
EXTRAS     ?= openai,text,test,dev,mt2ie
PY         := $(VENV)/bin/python
STAMP      := $(VENV)/.installed-$(shell echo "$(TORCH_SPEC) $(TORCHVISION_SPEC) $(TORCH_INDEX) $(EXTRAS)" | cksum | cut -d' ' -f1)
VISION_VENV ?= .venv-vision
# the pairs found on this project's machines (python.md): x86_64 a CUDA build that runs on the CPU, aarch64 a CPU build
VISION_TORCH_SPEC ?= $(if $(filter aarch64,$(shell uname -m)),torch==2.9.1 torchvision==0.24.1,torch==2.14.1 torchvision==0.29.1)
VISION_GB  ?= $(if $(filter aarch64,$(shell uname -m)),3,7)
VISION_PY  := $(VISION_VENV)/bin/python
VISION_STAMP := $(VISION_VENV)/.installed-$(shell echo "$(VISION_TORCH_SPEC) $(TORCH_INDEX)" | cksum | cut -d' ' -f1)
PYTEST_ARGS ?=
# No pip cache: CI installs each wheel once, and caching the CUDA build's wheels would take several GB more disk.
PIP_INSTALL := -m pip install --quiet --no-cache-dir

# Tests and the demo never reach a model or dataset hub.
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1

.PHONY: install test demo lint perf browser latex vision vllm-resolves clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): setup.cfg pyproject.toml | $(PY)
	$(PY) $(PIP_INSTALL) "$(TORCH_SPEC)" $(TORCHVISION_SPEC) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) $(PIP_INSTALL) -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

# The second test environment: a torch with its own torchvision (a CUDA build, runs on the CPU), for the
# judge families whose processors need torchvision.
$(VISION_STAMP): setup.cfg pyproject.toml
	@free=$$(df -Pk $(dir $(VISION_VENV)) 2>/dev/null | awk 'NR==2 {print int($$4 / 1048576)}'); if [ ! -d $(VISION_VENV) ] && [ -n "$$free" ] && [ "$$free" -lt $(VISION_GB) ]; then \
	  echo "make vision: $(VISION_VENV) ($(VISION_TORCH_SPEC)) takes about $(VISION_GB) GB of disk; $$free GB are free here"; \
	  exit 1; fi
	$(PYTHON) -m venv $(VISION_VENV)
	$(VISION_PY) $(PIP_INSTALL) $(VISION_TORCH_SPEC) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(VISION_PY) $(PIP_INSTALL) -e ".[test,vision]"
	touch $(VISION_STAMP)

vision: $(VISION_STAMP)

# Debian's Chromium for the HTML report's browser tests (playwright's own download cannot work offline).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Debian's pdflatex for the test that compiles every benchmark's tables.tex in a one-column article
# (booktabs is in texlive-latex-recommended, graphicx in texlive-latex-base).
latex:
	@command -v pdflatex >/dev/null 2>&1 || { \
	  echo "installing Debian's pdflatex for the tables.tex test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq texlive-latex-base \
	    texlive-latex-recommended >/dev/null; }

# The [vllm] extra must resolve on the index (vLLM pins transformers and torch exactly). uv's resolver reads
# each wheel's metadata by HTTP range requests: about 95 MB of index pages and metadata, a few seconds, nothing left on disk;
# pip's dry run would download vLLM and the CUDA torch whole (GBs).
vllm-resolves: install
	echo ".[vllm]" | $(VENV)/bin/uv pip compile --quiet --no-cache --python $(PY) --output-file /dev/null -

# The torchvision environment is built after the main suite, whose Space test has removed its own
# virtualenv (about 2 GB) by then: the two never take disk at once.
test: install browser latex vllm-resolves
	$(OFFLINE) $(PY) -m pytest $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory vision
	$(OFFLINE) $(VISION_PY) -m pytest -m torchvision $(PYTEST_ARGS) || [ $$? -eq 5 ]  # 5: PYTEST_ARGS chose none of them

demo: install
	$(OFFLINE) $(PY) -m t2ireason.demo

lint: install
	$(VENV)/bin/ruff check .

# Every script runs (perf/_*.py are their helpers), each printing all its figures; the ones that
# missed a target (or failed) are listed at the end, and then make fails.
perf: install
	@failed=""; for script in perf/[!_]*.py; do echo "== $$script"; \
	  $(OFFLINE) $(PY) $$script || failed="$$failed $$script"; done; \
	if [ -n "$$failed" ]; then echo "== missed a target or failed:$$failed"; exit 1; fi; \
	echo "== every perf script met its targets"

clean:
	rm -rf $(VENV) $(VISION_VENV) .pytest_cache .ruff_cache *.egg-info demo_output
