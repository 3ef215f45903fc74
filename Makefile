# kgcult — every pip call uses constraints.txt so torch stays the local CPU build.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
KG     := $(VENV)/bin/kgcult
STORE  ?= .kgcult/store
DEMO_OUT ?= build/demo

.PHONY: install vendor demo lint test test-all attacks bench seed clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# An editable install leaves the package uncompiled, and where PYTHONDONTWRITEBYTECODE is set
# no run ever writes its bytecode: every fresh process would compile kgcult's modules from
# source (0.15-0.3 s of a fresh `kgcult annotate` of 133 texts). compileall writes it once;
# an edited module is compiled again in memory, as Python does for any stale file.
install: $(PY) vendor
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e '.[all,test,lint]'
	$(PY) -m compileall -q kgcult

# YASGUI for the query page of `kgcult serve`, from npm into kgcult/serve/web/vendor/
# (git-ignored, package data of the wheel); without npm the page is the plain one.
vendor:
	tools/vendor-yasgui.sh

demo:
	@test -x $(KG) || { echo "run 'make install' first" >&2; exit 1; }
	$(KG) --store $(STORE) snapshot import dumps/seed --replace
	$(KG) --store $(STORE) closure
	$(KG) --store $(STORE) stats
	@echo; echo "== dishes per origin country (queries/checks/dishes-per-country.rq)"
	$(KG) --store $(STORE) sparql -f queries/checks/dishes-per-country.rq
	@echo; echo "== FmLAMA built from the seed (kgcult build fmlama): rows per origin country"
	$(KG) --store $(STORE) build fmlama --out $(DEMO_OUT) --print counts.jsonl

# ruff (ruff.toml) over the package, tests and benchmarks; mypy ([mypy] in setup.cfg) on the package.
lint:
	$(PY) -m ruff check --quiet .
	$(PY) -m mypy

# Test files run on every core (pytest-xdist; at most 4 workers), each file whole on one
# worker (--dist loadfile: a module's fixtures are built once); XDIST= runs them in one process.
XDIST ?= -n auto --maxprocesses 4 --dist loadfile

test:
	$(PY) -m pytest -q $(XDIST)

test-all:
	$(PY) -m pytest -q $(XDIST) -m "slow or not slow"

# Issue 30's attack list kept as tests (tests/attacks.toml): exactly those, slow ones too,
# then held/total per category.
attacks:
	$(PY) -m tests.attacks

# Each benchmark records bench/results/<name>.{json,md}; report.py assembles BENCHMARKS.md.
BENCHES ?= load closure closure_rebuild closure_query mirror mirror_projection views build_repeat link link_scale link_long probe serve page serve_runaway synth wdqs ingest
# A stand-in store with its closure, shared by the benchmarks that only read (serve, synth).
export KGCULT_BENCH_STORE ?= /tmp/kgcult-bench/standin-store
$(KGCULT_BENCH_STORE):
	$(KG) --store $@ load ../shared/standin/wikidata-standin.nt.gz --graph standin
	$(KG) --store $@ closure

bench: $(KGCULT_BENCH_STORE)
	@for b in $(BENCHES); do echo "== bench/$$b.py"; $(PY) bench/$$b.py || exit 1; done
	$(PY) bench/report.py

# Rebuild the seed snapshot dumps/seed/ from its hand-written Turtle sources.
seed:
	rm -rf /tmp/kgcult-seed-store
	$(KG) --store /tmp/kgcult-seed-store load dumps/seed/source/*.ttl
	$(KG) --store /tmp/kgcult-seed-store snapshot export dumps/seed
	rm -rf /tmp/kgcult-seed-store

clean:
	rm -rf .kgcult build *.egg-info
