# The two commands: `make run` and `make test`. Everything else here serves them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MODEL_STORE := torchserve/model-store

.PHONY: run test lint venv models bench sysdeps redis clean

# The venv is (re)installed whenever the package metadata changes.
$(STAMP): setup.py setup.cfg pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip wheel setuptools
	$(BIN)/python -m pip install -q -e '.[gateway,loadtest,model,dev]'
	@touch $@

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check animation gateway torchserve tests bvh setup.py

# --- model archives (torchserve/) -------------------------------------------
# Each archive is rebuilt when its handler, the model code or its weights change.
ARCHIVE_CODE := torchserve/__init__.py torchserve/build_archives.py \
	$(wildcard torchserve/handlers/*.py torchserve/model/*.py) \
	torchserve/model-config.yaml animation/__init__.py animation/images.py
models: $(MODEL_STORE)/drawn_humanoid_detector.mar $(MODEL_STORE)/drawn_humanoid_pose_estimator.mar \
	$(MODEL_STORE)/drawn_humanoid_segmenter.mar

$(MODEL_STORE)/drawn_humanoid_detector.mar: torchserve/weights/detector.pt torchserve/weights/person_detector.pt
$(MODEL_STORE)/drawn_humanoid_pose_estimator.mar: torchserve/weights/pose.pt
$(MODEL_STORE)/drawn_humanoid_segmenter.mar: torchserve/weights/segmenter.pt
$(MODEL_STORE)/%.mar: $(ARCHIVE_CODE) | $(STAMP)
	$(BIN)/python -m torchserve.build_archives --model-store $(@D) $*

# The synthetic drawings with their labels (box, joints, mask), as the README shows them.
docs/synth_contact_sheet.png: $(wildcard torchserve/training/synth/*.py) | $(STAMP)
	$(BIN)/python -m torchserve.training.synth sheet --out $@ --seed 0 --count 24

# --- system packages the tests need (apt, root only) ------------------------
# Ceph's radosgw (+ a monitor and an OSD) lets tests/security check real S3 signatures;
# Chromium and its driver run the page's browser tests (tests/browser); redis-server is
# the job queue of the jobs tests and of `make run`.
# Installed only when missing and only as root; elsewhere those tests skip and say why.
SYSDEPS := radosgw ceph-mon ceph-osd chromium chromium-driver redis-server
sysdeps:
	@if command -v radosgw >/dev/null && command -v ceph-mon >/dev/null \
		&& command -v ceph-osd >/dev/null && command -v chromium >/dev/null \
		&& command -v chromedriver >/dev/null && command -v redis-server >/dev/null; then :; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "sysdeps: not root, not installing $(SYSDEPS); the radosgw, browser and Redis tests will skip"; \
	else \
		echo "sysdeps: installing $(SYSDEPS) from Debian (once, about a minute)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends $(SYSDEPS); } \
			>/dev/null 2>&1 || echo "sysdeps: apt-get failed; the radosgw, browser and Redis tests will skip"; \
	fi

# `make run` needs only redis-server of these (its job queue), and not when REDIS_URL names
# a Redis of your own; without it (not root) the supervisor says jobs run in the gateway.
redis:
	@if [ -n "$$REDIS_URL" ] || command -v redis-server >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "run: installing redis-server from Debian (once)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends redis-server; } \
			>/dev/null 2>&1 || echo "run: apt-get failed; jobs run in the gateway's embedded queue"; \
	fi

# --- the two commands -------------------------------------------------------
# `make test` lints first: main stays ruff-clean.
# The supervisor (gateway/tools/devserver.py) takes the shell's place, so signals reach it
# directly; it is told make's pid, and stops every server (TorchServe, the gateway, Redis
# and the job worker) when make dies.
run: $(STAMP) models redis
	@DEVSERVER_PARENT=$$PPID exec $(BIN)/python -m gateway.tools.devserver

# The suite runs on TEST_WORKERS processes (pytest-xdist; each starts its own servers on
# free ports): two halve it on a 2-core machine. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: $(STAMP) models sysdeps lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

bench: $(STAMP) models
	$(BIN)/python -m animation.tools.bench

clean:
	rm -rf $(MODEL_STORE) var .pytest_cache
