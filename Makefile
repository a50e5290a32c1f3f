# Две главные команды: `make lab` (установить и открыть курс) и `make test` (все тесты).
# Окружение .venv создаётся само, если его нет, и обновляется при изменении pyproject.toml.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= dev
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
comma := ,

.PHONY: lab test lint unit nbval notebooks check-notebooks env clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	@touch $@

env: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=. notebooks/

test: lint unit nbval
	@echo "Все тесты пройдены."

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

unit: $(STAMP)
	$(BIN)/python -m pytest tests

# Решения выполняются целиком в строгом режиме: решение, не прошедшее свою же проверку, роняет CI.
nbval: $(STAMP)
	FEEDBACK_STRICT=1 MPLBACKEND=Agg $(BIN)/python -m pytest -p no:cacheprovider \
		--nbval-lax --nbval-current-env solutions/

notebooks: $(STAMP)
	$(BIN)/python -m feedback.teacher.release

check-notebooks: $(STAMP)
	$(BIN)/python -m feedback.teacher.release --check

clean:
	rm -rf $(VENV) .course-work
