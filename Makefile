# The two commands: `make demo` and `make test`. Both set everything up from a fresh clone.
SHELL := /bin/bash
PYTHON ?= $(shell bash scripts/find-python.sh 3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= dev,fd,coacd,arms,report,onnx,ray,looks,mesh-arm,hdf5,urdf
export MUJOCO_GL ?= egl
export SVT_LOG ?= 1

# Python 3.12 with demoforge, the lerobot env plugin and lerobot 0.6.1 (overlaying the cached lerobot venv).
LEROBOT_VENV := .venv-lerobot
LEROBOT_PY := $(LEROBOT_VENV)/bin/python

.PHONY: demo setup test test-fast bench bench-train-eval lerobot-venv lerobot-v21-venv lerobot-dev clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[$(EXTRAS)]'
	touch $@

# Real lerobot 0.6.1 in its own cached Python 3.12 venv (conformance tests and benchmarks only).
lerobot-venv:
	@bash scripts/lerobot-venv.sh > /dev/null

# The LeRobot v2.1 reader openpi trains with (lerobot 0.3.3, datasets 3.6.0), its own cached Python 3.11
# venv (the export conformance tests only).
lerobot-v21-venv:
	@bash scripts/lerobot-v21-venv.sh > /dev/null

# demoforge + plugin + lerobot in one Python 3.12 venv: run lerobot's scripts as
# $(LEROBOT_PY) -m lerobot.scripts.lerobot_train / lerobot_eval.
$(LEROBOT_VENV)/.installed: pyproject.toml plugins/lerobot_env_demoforge/pyproject.toml scripts/lerobot-venv.sh scripts/lerobot-dev-venv.sh
	bash scripts/lerobot-dev-venv.sh $(LEROBOT_VENV)

lerobot-dev: $(LEROBOT_VENV)/.installed

demo: $(BIN)/.installed
	$(BIN)/demoforge demo

# Test processes per suite (pytest-xdist); `work stealing` evens out the few minute-long tests.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist worksteal
PYTEST := -m pytest -q -p no:cacheprovider $(XDIST)

# The 3.11 venv and the cached lerobot venvs (0.6.1, and 0.3.3 for the exports; torch: the long ones
# on a fresh machine) are built side by side; then the 3.12 venv over the cached 0.6.1 one (not
# beside the 3.11 build: both write the editable install's src/demoforge.egg-info).
setup:
	$(MAKE) -j2 $(BIN)/.installed lerobot-venv lerobot-v21-venv
	$(MAKE) $(LEROBOT_VENV)/.installed

# Every test, slow and conformance ones included (Python 3.11); then on Python 3.12 the fast suite
# and the closed-loop tests (lerobot-train / lerobot-eval on the demoforge env plugin).
test: setup
	DEMOFORGE_LEROBOT_PYTHON="$$(bash scripts/lerobot-venv.sh)" DEMOFORGE_REQUIRE_LEROBOT=1 \
		DEMOFORGE_LEROBOT_V21_PYTHON="$$(bash scripts/lerobot-v21-venv.sh)" $(BIN)/python $(PYTEST)
	DEMOFORGE_REQUIRE_CLOSED_LOOP=1 $(LEROBOT_PY) $(PYTEST) -m "closed_loop or not (slow or conformance)"

# The fast suite only (no slow, no conformance), for the edit-test loop.
test-fast: $(BIN)/.installed
	$(BIN)/python -m pytest -q $(XDIST) -m "not slow and not conformance"

# The benchmarks' own extra (bench_bake's reference ffmpeg) over the test venv.
$(BIN)/.bench: $(BIN)/.installed
	$(BIN)/pip install -q -e '.[$(EXTRAS),bench]'
	touch $@

bench: $(BIN)/.bench lerobot-venv
	DEMOFORGE_LEROBOT_PYTHON="$$(bash scripts/lerobot-venv.sh)" $(BIN)/python benchmarks/bench_writer.py

# Train with stock lerobot on demoforge data and evaluate in the demoforge env (long; see BENCHMARKS.md).
bench-train-eval: $(LEROBOT_VENV)/.installed
	$(LEROBOT_PY) benchmarks/bench_train_eval.py

clean:
	rm -rf $(VENV) $(LEROBOT_VENV) build dist src/*.egg-info plugins/*/*.egg-info
