# The two commands: `make demo` and `make test`. Both set everything up from a fresh clone.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= dev,fd,coacd,arms,report,onnx,ray
export MUJOCO_GL ?= egl
export SVT_LOG ?= 1

.PHONY: demo test test-fast bench lerobot-venv clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[$(EXTRAS)]'
	touch $@

# Real lerobot 0.6.1 in its own cached Python 3.12 venv (conformance tests and benchmarks only).
lerobot-venv:
	@bash scripts/lerobot-venv.sh > /dev/null

demo: $(BIN)/.installed
	$(BIN)/demoforge demo

# Every test, slow and conformance ones included.
test: $(BIN)/.installed lerobot-venv
	DEMOFORGE_LEROBOT_PYTHON="$$(bash scripts/lerobot-venv.sh)" DEMOFORGE_REQUIRE_LEROBOT=1 \
		$(BIN)/python -m pytest -q -p no:cacheprovider

# The fast suite only (no slow, no conformance), for the edit-test loop.
test-fast: $(BIN)/.installed
	$(BIN)/python -m pytest -q -m "not slow and not conformance"

bench: $(BIN)/.installed lerobot-venv
	DEMOFORGE_LEROBOT_PYTHON="$$(bash scripts/lerobot-venv.sh)" $(BIN)/python benchmarks/bench_writer.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
