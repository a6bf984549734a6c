# nsighttk — common tasks.  `make help` lists them.
PYTHON ?= python3
NVCC   ?= nvcc
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

.PHONY: help install setup torch-triton test lint samples demo bench clean inspect analyze compare runs report submit

help:
	@echo "make demo         install, then profile the add sample with nsys (GPU) or analyse a shipped capture (no GPU)"
	@echo "make test         install everything the tests need, then run them (no GPU needed)"
	@echo "make lint         ruff + mypy"
	@echo "make samples      build cuda_samples/ for SMS=\"$(SMS)\" into $(SAMPLE_DIR)/"
	@echo "make bench        nsighttk stats vs nsys stats on a synthetic 1M-kernel export"
	@echo "login node (no GPU):"
	@echo "make inspect      PTX/SASS/registers of WORKLOAD=$(WORKLOAD)'s Triton kernels for ARCH=$(ARCH)"
	@echo "make analyze      summarise CAPTURE=... (.sqlite, .nsys-rep with nsys, .ncu-rep, Kineto .json)"
	@echo "make compare      nsighttk compare A=<run|file> B=<run|file> (FAIL_IF_SLOWER=5 for a gate)"
	@echo "make runs         the recorded runs and Slurm jobs (import runs copied back: nsighttk runs import DIR)"
	@echo "make report       self-contained HTML report of RUN=<run id|run dir|capture> (none: a shipped capture)"
	@echo "make submit       sbatch CMD=\"nsighttk nsys add\" [PARTITION=gpu GPUS=1 TIME=00:10:00 ACCOUNT=...]"

# Offline machines (HPC compute nodes) cannot fetch build tools: fall back to the installed ones.
install:
	$(PYTHON) -m pip install -q -e . || $(PYTHON) -m pip install -q --no-build-isolation -e .

# Everything the tests need: the package with its dev tools, Debian's nsys 2022.4 as a reference
# `nsys stats` (tests/tools/nsys2022.sh), Chromium and Slurm (tests/tools/system-packages.sh; apt).
setup: torch-triton
	$(PYTHON) -m pip install -q -e ".[dev,ncu]"
	bash tests/tools/nsys2022.sh
	bash tests/tools/system-packages.sh

# PyTorch and Triton, if missing: the bench tests, and `make inspect` (Triton compiles without a GPU).
torch-triton:
	$(PYTHON) -c "import torch" 2>/dev/null || $(PYTHON) -m pip install -q torch==2.13.0
	$(PYTHON) -c "import triton" 2>/dev/null || $(PYTHON) -m pip install -q triton==3.9.0

test: setup
	$(PYTHON) -m pytest -q

lint: setup
	$(PYTHON) -m ruff check nsighttk tests kernels
	$(PYTHON) -m mypy

# On a machine with a GPU and nsys: profile the add sample.  Without: analyse a real H200 capture.
demo: install
	@if nsighttk doctor --json | $(PYTHON) -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["gpus"] and d["tools"]["nsys"]["path"] else 1)'; then \
		nsighttk nsys add; \
	else \
		echo "No GPU or no nsys here: analysing a real capture shipped with nsighttk (PyTorch + Triton on an NVIDIA H200)."; \
		nsighttk analyze $(DEMO_CAPTURE); \
		nsighttk report $(DEMO_CAPTURE) -o build/demo-report.html --force; \
	fi

bench: install
	$(PYTHON) tests/benchmarks/stats_vs_nsys.py

samples: $(addprefix $(SAMPLE_DIR)/,$(SAMPLES))

$(SAMPLE_DIR)/%: cuda_samples/%.cu cuda_samples/common.h
	@mkdir -p $(SAMPLE_DIR)
	$(NVCC) $(NVCCFLAGS) $(GENCODE) -o $@ $<

clean:
	rm -rf build

inspect: install torch-triton
	nsighttk inspect $(WORKLOAD) --arch $(ARCH)

analyze: install
	nsighttk analyze $(CAPTURE)

compare: install
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make compare A=<run id|run dir|file> B=<...> [FAIL_IF_SLOWER=5]"; exit 2; }
	nsighttk compare $(A) $(B) $(if $(FAIL_IF_SLOWER),--fail-if-slower $(FAIL_IF_SLOWER))

runs: install
	nsighttk runs list
	nsighttk runs jobs

# RUN: a run id, run directory or capture; without one, the shipped capture's report goes to build/
report: install
	nsighttk report $(if $(RUN),$(RUN),$(DEMO_CAPTURE) -o build/report.html --force)

submit: install
	@test -n "$(CMD)" || { echo 'usage: make submit CMD="nsighttk nsys add" [PARTITION=gpu GPUS=1 TIME=00:10:00 ACCOUNT=a]'; exit 2; }
	nsighttk submit $(if $(PARTITION),-p $(PARTITION)) $(if $(GPUS),--gpus $(GPUS)) $(if $(TIME),-t $(TIME)) \
		$(if $(ACCOUNT),-A $(ACCOUNT)) -- $(CMD)
