# Две главные команды: `make lab` (установить и открыть курс) и `make test` (все тесты).
# Окружение .venv создаётся само, если его нет, и обновляется при изменении pyproject.toml.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# dev — тесты и nbgrader; tiny — keras-hub и jax для CPU, чтобы GPU-лабораторные шли в крошечном режиме.
EXTRAS ?= dev,tiny
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: lab test lint unit nbval notebooks release check-notebooks grade feedback public sandbox \
	gpu-check env browser clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	@touch $@

env: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=. $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

test: lint unit nbval
	@echo "Все тесты пройдены."

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Chromium из пакетов Debian для теста в настоящем браузере (tests/test_browser.py).
browser:
	@bash .ci/install-browser

# bubblewrap из Debian: песочница оценивания (feedback/teacher/sandbox.py) и её тесты.
sandbox:
	@bash .ci/install-sandbox

unit: $(STAMP) browser sandbox
	$(BIN)/python -m pytest tests

# Решения выполняются целиком в строгом режиме: решение, не прошедшее свою же проверку, роняет CI.
# GPU-лабораторные идут в крошечном режиме (COURSE7_TINY=1): без видеокарты и без интернета.
nbval: $(STAMP)
	FEEDBACK_STRICT=1 COURSE7_TINY=1 MPLBACKEND=Agg $(BIN)/python -m pytest -p no:cacheprovider \
		--nbval-lax --nbval-current-env solutions/

notebooks: $(STAMP)
	$(BIN)/python -m feedback.teacher.release

release: notebooks

# make grade — всё из .course-work/submitted; make grade SUBMISSIONS=архив.zip (или папка) JOBS=4
grade: $(STAMP) sandbox
	$(BIN)/python -m feedback.teacher.grade $(SUBMISSIONS) $(if $(JOBS),--jobs $(JOBS))

# Отчёты для учащихся заново — после ручной проверки в formgrader (ничего не выполняет).
feedback: $(STAMP)
	$(BIN)/python -m feedback.teacher.reports

# Публичная копия для учащихся без solutions/ и тестов: make public DEST=../course7-public
public: $(STAMP)
	$(BIN)/python -m feedback.teacher.public $(DEST)

check-notebooks: $(STAMP)
	$(BIN)/python -m feedback.teacher.release --check

# Путь лабораторной 7.5 (bfloat16 + LoRA + накопление) на настоящей архитектуре Gemma 3 на CUDA.
# Нужен jax с CUDA: pip install -U "jax[cuda12]". Без GPU честно сообщает, что не запускался.
gpu-check: $(STAMP)
	$(BIN)/python -m feedback.gpu_check $(GPU_CHECK_ARGS)

clean:
	rm -rf $(VENV) .course-work
