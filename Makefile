# nsighttk — common tasks.  `make help` lists them.
#
# Python: every target runs nsighttk from a project environment and never writes to the system's
# interpreter.  Where `$(PYTHON)` is itself a virtual environment's (one is activated, or python3 is a
# venv's, as on our GPU machines) nsighttk is installed there; otherwise into .venv/ beside this file,
# made with $(PYTHON) (Debian's or Ubuntu's own python3 is fine, PEP 668 or not; no root needed).
PYTHON ?= python3
ACTIVE_VENV := $(shell $(PYTHON) -c 'import sys; print(sys.prefix if sys.prefix != sys.base_prefix else "")' 2>/dev/null)
VENV   ?= $(or $(ACTIVE_VENV),.venv)
BIN    := $(VENV)/bin
PY     := $(BIN)/python
NSIGHTTK := $(BIN)/nsighttk
# (sbin last: a PATH without it, e.g. PATH=/usr/bin:/bin, still finds slurmctld and munged for the tests)
export PATH := $(abspath $(BIN)):$(PATH):/usr/sbin:/sbin

# What `make test` adds to the environment: PyTorch's CPU wheel and Triton, pinned (an unpinned torch
# from PyPI is the CUDA build, gigabytes of wheels).
TORCH  ?= torch==2.13.0
TRITON ?= triton==3.9.0
# Extras for `make install` / `make wheelhouse` (e.g. EXTRAS=nvtx,plot); WHEELS=<folder>: install
# from a wheelhouse only (`pip install --no-index --find-links`), for machines without network.
EXTRAS ?=
WHEELS ?=

# nvcc: on PATH, else CUDA's default places (as nsighttk's own discovery looks)
NVCC   ?= $(or $(shell command -v nvcc 2>/dev/null),$(firstword $(wildcard $(CUDA_HOME)/bin/nvcc /usr/local/cuda/bin/nvcc \
          /usr/local/cuda-*/bin/nvcc)),nvcc)
# Architectures for `make samples` (cuda-samples' idiom): SASS for each, PTX for the highest.
SMS    ?= 75 80 86 89 90
HIGHEST_SM := $(lastword $(sort $(SMS)))
GENCODE := $(foreach sm,$(SMS),-gencode arch=compute_$(sm),code=sm_$(sm)) \
           -gencode arch=compute_$(HIGHEST_SM),code=compute_$(HIGHEST_SM)
NVCCFLAGS ?= -O3 -lineinfo
SAMPLES := $(basename $(notdir $(wildcard cuda_samples/*.cu)))
SAMPLE_DIR := build/samples-$(subst $(eval) ,-,$(strip $(SMS)))

DEMO_CAPTURE := tests/fixtures/h200-nsys2025.3/streams_demo.sqlite

# Login-node targets (nvcc, no GPU): see `make help`.
ARCH     ?= sm_$(HIGHEST_SM)
WORKLOAD ?= square
CAPTURE  ?= $(DEMO_CAPTURE)

# Offline machines: `make wheelhouse` on a connected one writes nsighttk's wheel and every wheel it
# needs into WHEELHOUSE, for PYVER (default: $(PYTHON)'s) on PLATFORMS (Linux x86-64, glibc 2.17+).
WHEELHOUSE ?= build/wheelhouse
PYVER      ?=
PLATFORMS  ?= manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
              manylinux2014_x86_64 manylinux1_x86_64
FOR_TARGET := $(if $(PYVER),--python-version $(PYVER) --implementation cp --abi cp$(subst .,,$(PYVER)) \
              --abi abi3 --abi none $(addprefix --platform ,$(PLATFORMS)))

# Stamps: the environment holds nsighttk (CORE) / also what the tests need (DEV), as of pyproject.toml.
CORE := $(VENV)/.nsighttk-core
DEV  := $(VENV)/.nsighttk-dev
PIP_FROM := $(if $(WHEELS),--no-index --find-links $(abspath $(WHEELS)))
comma := ,
# $(call pip,ARGS): pip install into the environment; on failure one line says what to do offline.
pip = { echo 'make: pip install $(PIP_FROM) $(1) (into $(VENV))'; $(PY) -m pip install -q $(PIP_FROM) $(1) || { echo 'make: pip could not install $(1) into $(VENV) (see above); \
      $(if $(WHEELS),is every wheel it needs in $(WHEELS)? make it with: make wheelhouse PYVER=<x.y> (README: offline \
      machines),no network here? on a connected machine run make wheelhouse PYVER=<x.y>$(comma) copy the folder over$(comma) \
      then make install WHEELS=<folder> (README: offline machines))' >&2; exit 1; }; }
EDITABLE = -e ".$(if $(EXTRAS),[$(EXTRAS)])"

.PHONY: help install setup system-deps torch-triton test test-fast fuzz lint samples demo bench clean inspect analyze compare \
        runs report submit wheelhouse

help:
	@echo "make demo         install, then profile the add sample with nsys (GPU) or analyse a shipped capture (no GPU)"
	@echo "make test         install everything the tests need, then run them on WORKERS=$(WORKERS) processes (no GPU needed; apt steps need root)"
	@echo "make test-fast    the tests not marked slow (at most 3 minutes on 2 cores), after the same set-up"
	@echo "make fuzz         fuzz every real capture with fresh seeds for SECONDS=$(SECONDS) (each seed printed)"
	@echo "make lint         ruff + mypy"
	@echo "make install      nsighttk alone, into $(VENV) [EXTRAS=nvtx,plot] [WHEELS=<wheelhouse> offline]"
	@echo "make system-deps  (root, apt) Debian's nsys 2022.4, Chromium, Slurm + munge for the tests"
	@echo "make wheelhouse   wheels for an offline machine into $(WHEELHOUSE) [PYVER=3.12] [EXTRAS=nvtx]"
	@echo "make samples      build cuda_samples/ for SMS=\"$(SMS)\" into $(SAMPLE_DIR)/"
	@echo "make bench        nsighttk stats vs nsys stats on a synthetic 1M-kernel export"
	@echo "login node (no GPU):"
	@echo "make inspect      PTX/SASS/registers of WORKLOAD=$(WORKLOAD)'s Triton kernels for ARCH=$(ARCH)"
	@echo "make analyze      summarise CAPTURE=... (.sqlite, .nsys-rep with nsys, .ncu-rep, Kineto .json)"
	@echo "make compare      nsighttk compare A=<run|file> B=<run|file> (FAIL_IF_SLOWER=5 for a gate)"
	@echo "make runs         the recorded runs and Slurm jobs (import runs copied back: nsighttk runs import DIR)"
	@echo "make report       self-contained HTML report of RUN=<run id|run dir|capture> (none: a shipped capture)"
	@echo "make submit       sbatch CMD=\"nsighttk nsys add\" [PARTITION=gpu GPUS=1 TIME=00:10:00 ACCOUNT=...]"

# ------------------------------------------------------------------------------- the environment

# .venv/ with pip.  Debian and Ubuntu split venv's pip bootstrap (ensurepip) into python3-venv: without
# it the environment is made without pip, and the system's pip installs pip into it (pip --python).
$(VENV)/pyvenv.cfg:
	@command -v $(PYTHON) >/dev/null || { echo "make: $(PYTHON) not found: install Python 3.10 or newer, or \
	make ... PYTHON=<a Python 3.10+>" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "make: nsighttk needs Python 3.10 or \
	newer; $(PYTHON) is $$($(PYTHON) --version 2>&1): make ... PYTHON=<a Python 3.10+>" >&2; exit 1; }
	@echo "make: creating $(VENV) with $$(command -v $(PYTHON)) ($$($(PYTHON) --version 2>&1))"
	@$(PYTHON) -m venv $(VENV) >/dev/null 2>&1 && $(PY) -m pip --version >/dev/null 2>&1 || { \
	  $(PYTHON) -m venv --without-pip $(VENV) && $(PYTHON) -m pip --python $(PY) install -q $(PIP_FROM) pip; } \
	  || { rm -f $@; echo "make: $(PYTHON) cannot make a virtual environment with pip (no ensurepip, no pip): \
	install python3-venv (Debian/Ubuntu, as root) or use PYTHON=<another Python 3.10+>" >&2; exit 1; }

install: $(VENV)/pyvenv.cfg
	@$(call pip,$(EDITABLE))
	@touch $(CORE)

$(CORE): pyproject.toml | $(VENV)/pyvenv.cfg
	@$(call pip,$(EDITABLE))
	@touch $@

# Everything the Python tests need: the package with its dev tools and ncu-report, PyTorch, Triton.
$(DEV): pyproject.toml | $(VENV)/pyvenv.cfg
	@$(call pip,-e ".[dev$(comma)ncu$(if $(EXTRAS),$(comma)$(EXTRAS))]")
	@$(PY) -c "import torch" 2>/dev/null || $(call pip,$(TORCH))
	@$(PY) -c "import triton" 2>/dev/null || $(call pip,$(TRITON))
	@touch $(CORE) $@

# PyTorch and Triton, if missing: `make inspect` (Triton compiles without a GPU) and the bench tests.
torch-triton: $(CORE)
	@$(PY) -c "import torch" 2>/dev/null || $(call pip,$(TORCH))
	@$(PY) -c "import triton" 2>/dev/null || $(call pip,$(TRITON))

# Needs root and apt (once per machine): Debian's nsys 2022.4 as a reference `nsys stats`, Chromium
# (HTML reports opened headless) and Slurm + munge (nsighttk submit against a real cluster).  Each
# script does nothing when its packages are there, and stops with one line when it would need root.
# NO_APT=1 skips them: the tests that need them skip.
system-deps:
ifeq ($(NO_APT),)
	@bash tests/tools/nsys2022.sh
	@bash tests/tools/system-packages.sh
else
	@echo "make: NO_APT=1: not installing Debian's nsys 2022.4, Chromium, Slurm; the tests that need them skip"
endif

setup: system-deps $(DEV)

# The suite runs on WORKERS processes (pytest-xdist; auto: one a CPU core), each test file whole on
# one worker (its module fixtures built once), the slow files first (tests/conftest.py: SLOW_FILES).
# WORKERS=0 runs them all in one process.
WORKERS ?= auto
PYTEST := $(PY) -m pytest -q $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadfile --no-loadscope-reorder)

test: setup
	$(PYTEST)

# The tests that are not marked slow (tests/conftest.py: SLOW_FILES): a quick check while working.
test-fast: setup
	$(PYTEST) -m "not slow"

# Fresh fuzz seeds for as long as given (tests/fuzz/__main__.py); a failing round prints the
# NSIGHTTK_FUZZ_SEED that replays it.  `make test` runs the fuzz tests once, with one seed.
SECONDS ?= 600
fuzz: setup
	$(PY) -m tests.fuzz $(SECONDS)

lint: $(DEV)
	$(PY) -m ruff check nsighttk tests kernels
	$(PY) -m mypy

# ------------------------------------------------------------------------------- offline machines

# On a connected machine: nsighttk's wheel, its dependencies, and the build backend with its editable
# helper (hatchling, editables: `make install` from the checkout), as wheels only, for PYVER on
# PLATFORMS.  Copy WHEELHOUSE (and the checkout) over, then there: make install WHEELS=<folder>;
# make demo.  Without the checkout: pip install --no-index --find-links <folder> nsighttk
wheelhouse: $(CORE)
	@mkdir -p $(WHEELHOUSE) && rm -f $(WHEELHOUSE)/nsighttk-*.whl
	$(PY) -m pip wheel -q --no-deps -w $(WHEELHOUSE) .
	$(PY) -m pip download -q --only-binary=:all: $(FOR_TARGET) -d $(WHEELHOUSE) \
	  "$$(ls $(WHEELHOUSE)/nsighttk-*.whl)$(if $(EXTRAS),[$(EXTRAS)])" "hatchling>=1.26" editables
	@echo "wheelhouse: $(WHEELHOUSE): $$(ls $(WHEELHOUSE) | wc -l) wheels, $$(du -sh $(WHEELHOUSE) | cut -f1), \
	for Python $(or $(PYVER),$$($(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])')); \
	offline: make install WHEELS=<this folder>$(if $(EXTRAS), EXTRAS=$(EXTRAS))"

# ------------------------------------------------------------------------------- using nsighttk

# On a machine with a GPU and nsys: profile the add sample.  Without: analyse a real H200 capture.
demo: $(CORE)
	@if $(NSIGHTTK) doctor --json | $(PY) -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["gpus"] and d["tools"]["nsys"]["path"] else 1)'; then \
		$(NSIGHTTK) nsys add; \
	else \
		echo "No GPU or no nsys here: analysing a real capture shipped with nsighttk (PyTorch + Triton on an NVIDIA H200)."; \
		$(NSIGHTTK) analyze $(DEMO_CAPTURE) && \
		$(NSIGHTTK) report $(DEMO_CAPTURE) -o build/demo-report.html --force; \
	fi

bench: $(CORE)
	$(PY) tests/benchmarks/stats_vs_nsys.py

samples: $(addprefix $(SAMPLE_DIR)/,$(SAMPLES))

$(SAMPLE_DIR)/%: cuda_samples/%.cu cuda_samples/common.h
	@mkdir -p $(SAMPLE_DIR)
	$(NVCC) $(NVCCFLAGS) $(GENCODE) -o $@ $<

clean:
	rm -rf build

inspect: torch-triton
	$(NSIGHTTK) inspect $(WORKLOAD) --arch $(ARCH)

analyze: $(CORE)
	$(NSIGHTTK) analyze $(CAPTURE)

compare: $(CORE)
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make compare A=<run id|run dir|file> B=<...> [FAIL_IF_SLOWER=5]"; exit 2; }
	$(NSIGHTTK) compare $(A) $(B) $(if $(FAIL_IF_SLOWER),--fail-if-slower $(FAIL_IF_SLOWER))

runs: $(CORE)
	$(NSIGHTTK) runs list
	$(NSIGHTTK) runs jobs

# RUN: a run id, run directory or capture; without one, the shipped capture's report goes to build/
report: $(CORE)
	$(NSIGHTTK) report $(if $(RUN),$(RUN),$(DEMO_CAPTURE) -o build/report.html --force)

submit: $(CORE)
	@test -n "$(CMD)" || { echo 'usage: make submit CMD="nsighttk nsys add" [PARTITION=gpu GPUS=1 TIME=00:10:00 ACCOUNT=a]'; exit 2; }
	$(NSIGHTTK) submit $(if $(PARTITION),-p $(PARTITION)) $(if $(GPUS),--gpus $(GPUS)) $(if $(TIME),-t $(TIME)) \
		$(if $(ACCOUNT),-A $(ACCOUNT)) -- $(CMD)
