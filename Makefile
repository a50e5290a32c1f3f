# Главные команды: `make lab` (установить и открыть курс), `make test` (быстрый прогон, ≤ 5 минут)
# и `make test-all` (все тесты; его запускает CI).
# Окружение .venv создаётся само, если его нет, и обновляется при изменении pyproject.toml.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Окружение одно, .venv, а дополнения (pyproject.toml) — по задаче: make lab ставит только
# LAB_EXTRAS (lab — JupyterLab; tiny — keras-hub, jax и tensorflow для CPU, чтобы GPU-лабораторные
# шли в крошечном режиме; без GPU-лабораторных хватит `make lab LAB_EXTRAS=lab`), остальные
# команды — EXTRAS (dev — тесты, nbgrader и Dask). Учащийся запускает только make lab, и в его
# .venv нет ничего лишнего; у разработчика dev ставится поверх, второй копии tensorflow нет.
# Каждый набор отмечается своим файлом в .venv и ставится заново при изменении pyproject.toml.
LAB_EXTRAS ?= lab,tiny
EXTRAS ?= dev,tiny
comma := ,
stamp = $(VENV)/.installed-$(subst $(comma),-,$(1))
LAB_STAMP := $(call stamp,$(LAB_EXTRAS))
STAMP := $(call stamp,$(EXTRAS))

.PHONY: lab lab-notice test test-all lint unit unit-fast nbval nbval-cpu notebooks release check-notebooks grade formgrader \
	feedback export public summary \
	sandbox bench gpu-check env browser clean hub hub-proxy hub-stop hub-release collect dask-certs

# Ставит uv (версия — из дополнения dev в pyproject.toml), а он — пакет курса и свежий pip:
# uv разрешает зависимости и пишет байт-код на всех ядрах. Байт-код нужен сразу: в песочнице
# оценивания site-packages только для чтения, и без готовых .pyc каждое ядро компилировало бы
# tensorflow и keras заново.
# Имя файла-отметки несёт набор дополнений: .installed-lab-tiny → '.[lab,tiny]'.
UV_PIN := $(shell grep -o '"uv==[^"]*"' pyproject.toml)
$(VENV)/.installed-%: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check $(UV_PIN)
	$(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode \
		--upgrade-package pip pip -e '.[$(subst -,$(comma),$*)]'
	@touch $@

env: $(STAMP)

# Учащийся работает в рабочей копии my-labs/ (в .gitignore), а не в notebooks/: make release и
# git pull переписывают notebooks/, а в my-labs/ feedback.workspace только добавляет недостающие
# лабораторные и файлы; новую версию уже скопированной тетрадки кладёт рядом (lab.new.ipynb).
WORKSPACE := my-labs
# Установка молчит (uv --quiet) и идёт минуты, поэтому перед ней make lab говорит, что ставит и
# сколько это весит. Размер .venv измерен `du -s` после установки в чистый venv на Linux
# (5 декабря 2026, uv 0.13.9, Python 3.11): lab,tiny — 3350 МиБ, lab — 542 МиБ. С уже
# скачанными пакетами (кэш uv) установка шла 1 мин 53 с и 46 с на 2 ядрах; скачивание — сверх.
LAB_SIZE_lab-tiny := около 3,3 ГиБ
LAB_SIZE_lab := около 0,5 ГиБ
LAB_WHAT_lab-tiny := JupyterLab, Keras, keras-hub, JAX и TensorFlow для процессора
LAB_WHAT_lab := JupyterLab (без GPU-лабораторных)
LAB_KEY := $(subst $(comma),-,$(LAB_EXTRAS))
lab: lab-notice $(LAB_STAMP)
	$(BIN)/python -m feedback.workspace --release notebooks --workspace $(WORKSPACE)
	$(BIN)/jupyter lab --notebook-dir=$(WORKSPACE) $(if $(filter 0,$(shell id -u)),--allow-root)

# Объявление — только когда установка и правда будет (нет отметки или pyproject.toml новее).
lab-notice:
	@test $(LAB_STAMP) -nt pyproject.toml || echo "Ставлю окружение курса в $(VENV) \
	($(or $(LAB_WHAT_$(LAB_KEY)),дополнения $(LAB_EXTRAS))): $(or $(LAB_SIZE_$(LAB_KEY)),несколько ГиБ) \
	на диске, установка займёт несколько минут и идёт молча — дождитесь адреса JupyterLab."

# Два прогона (docs/development.md, «Тесты»). make test — быстрый: проверки, подсказки,
# настройки, сбор работ, баллы, выгрузка, аналитика, страницы, решения CPU-лабораторных и один
# настоящий make grade маленького класса (tests/teacher/grading/test_grade_smoke.py); тест без отметки slow дольше
# FAST_TEST_SECONDS — ошибка с его именем. make test-all — всё, его запускает CI. Сначала решения
# (nbval): они же наполняют кэш компиляции JAX, и тетрадки в тестах пакета не компилируют
# крошечную Gemma заново.
test: lint nbval-cpu unit-fast
	@echo "Быстрый прогон пройден (весь — make test-all)."

test-all: lint nbval unit
	@echo "Все тесты пройдены."

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Chromium из пакетов Debian для теста в настоящем браузере (tests/project/test_lab_7_2_browser.py).
browser:
	@bash .ci/install-browser

# bubblewrap из Debian: песочница оценивания (feedback/teacher/unit/sandbox.py) и её тесты.
sandbox:
	@bash .ci/install-sandbox

# Тесты идут в несколько процессов (pytest-xdist): на два больше, чем ядер, — многие тесты
# ждут ядро, песочницу, браузер или истечения бюджета, и лишние процессы занимают это время.
# Кэши — свои у прогона, в .course-work/: крошечная Gemma собирается один раз (до решений, а
# не наперегонки в четырёх тетрадках), а кэш компиляции JAX общий — крошечная Gemma
# компилирует одни и те же программы во многих тетрадках, а с кэшем — один раз. Время каждого
# теста — в .course-work/*-times.xml (их читает make bench). Порядок, в котором процессы берут
# тесты, задаёт tests/conftest.py (сначала оценивание класса, потом большие группы), поэтому
# xdist свою сортировку не применяет (--no-loadscope-reorder).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 2 )))
# Настройки кэша JAX — те же, что у ядер оценивания (feedback/teacher/unit/caches.py); «=», а не
# «:=»: читаются, когда окружение уже установлено.
TEST_CACHES = COURSE7_CACHE_DIR=$(CURDIR)/.course-work/cache \
	JAX_COMPILATION_CACHE_DIR=$(CURDIR)/.course-work/jax-cache \
	$(shell $(BIN)/python -m feedback.teacher.commands.caches)

unit: $(STAMP) browser sandbox hub-proxy
	$(TEST_CACHES) $(BIN)/python -m pytest tests -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder \
		--junitxml=.course-work/test-times.xml

# Быстрый прогон: без тестов slow (их отметку ставят и долгие фикстуры, tests/conftest.py), по
# процессу на ядро — так время теста меньше зависит от соседей.
FAST_TEST_SECONDS ?= 3
FAST_WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
unit-fast: $(STAMP) browser sandbox
	$(TEST_CACHES) $(BIN)/python -m pytest tests -m "not slow" --max-fast-seconds $(FAST_TEST_SECONDS) \
		-n $(FAST_WORKERS) --dist loadgroup --no-loadscope-reorder --junitxml=.course-work/fast-times.xml

# Решения выполняются целиком в строгом режиме: решение, не прошедшее свою же проверку, роняет CI.
# Плагин tests/support/nbval_kernels.py запускает заново ядро, которому достался занятый порт (процессы
# nbval стартуют ядра в одну секунду), и показывает stderr ядра, если оно упало по другой причине;
# tests/support/nbval_outputs.py требует строк, которые решение должно показать (вывод после 4-й эпохи).
# GPU-лабораторные идут в крошечном режиме (COURSE7_TINY=1): без видеокарты и без интернета.
nbval: $(STAMP)
	$(TEST_CACHES) $(BIN)/python -c "from feedback.gpu.tiny_gemma import tiny_preset_path as p; p()"
	FEEDBACK_STRICT=1 COURSE7_TINY=1 MPLBACKEND=Agg PYTHONPATH=tests/support $(TEST_CACHES) $(BIN)/python -m pytest \
		-p no:cacheprovider -p nbval_kernels -p nbval_outputs -n $(TEST_WORKERS) --dist loadfile --nbval-lax \
		--nbval-current-env --junitxml=.course-work/nbval-times.xml solutions/

# Решения CPU-лабораторных (7.2, 7.4) — для быстрого прогона: без keras и крошечной Gemma.
CPU_LABS := solutions/lab_7_2_training_flops solutions/lab_7_4_gpu_memory
nbval-cpu: $(STAMP)
	FEEDBACK_STRICT=1 MPLBACKEND=Agg PYTHONPATH=tests/support $(BIN)/python -m pytest -p no:cacheprovider \
		-p nbval_kernels -n 2 --dist loadfile --nbval-lax --nbval-current-env $(CPU_LABS)

notebooks: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.release

release: notebooks

# Пути и имена из командной строки (SUBMISSIONS, ROSTER, WORKSHEET, LAB, DEST, …) рецепты берут из
# окружения — "$$ROSTER", а не текстом $(ROSTER): так имя с пробелом, скобками, кавычками или
# по-русски («~/Загрузки/7.2 (1).zip» — второе скачивание браузера) доходит до программы одним
# аргументом, а не ломает строку bash. Опции — в форме --roster=…, после «--» — позиционные:
# имя, которое начинается с «-», тоже остаётся именем.
export SUBMISSIONS ROSTER WORKSHEET LAB DEST JOBS SCHEDULER HUB_PORT HUB_IP TEACHER HUB_MODE \
	HUB_PREFIX ALLOW_INSECURE_DASK

# make grade — всё из .course-work/submitted; make grade SUBMISSIONS=архив.zip (или папка) JOBS=4;
# на рабочих Dask: make grade SCHEDULER=tls://host:8786 (только TLS с сертификатами make dask-certs;
# tcp:// — отказ, пока не сказано ALLOW_INSECURE_DASK=1: рабочие выполнили бы код любого, кто
# достаёт до планировщика); со списком учащихся (id,first_name,last_name,email):
# make grade ROSTER=students.csv — он копируется в .course-work/students.csv, и дальше берётся
# оттуда сам (docs/teaching.md).
grade: $(STAMP) sandbox
	$(BIN)/python -m feedback.teacher.commands.grade $${JOBS:+--jobs="$$JOBS"} \
		$${SCHEDULER:+--scheduler="$$SCHEDULER"} $${ROSTER:+--roster="$$ROSTER"} \
		$${SUBMISSIONS:+-- "$$SUBMISSIONS"}

# Сертификаты Dask курса (.course-work/dask-certs/, 0700, ключи 0600): центр курса, node — планировщику
# и рабочим, client — make grade; печатает команды dask scheduler и dask worker. REPLACE=1 — выпустить
# заново (прежние перестанут подходить).
dask-certs: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.dask_certs certs $(if $(filter 1,$(REPLACE)),--replace)

# Секунды на работу при JOBS=1 и 2, ускорение, постоянная часть и время групп тестов.
bench: $(STAMP) sandbox
	$(BIN)/python -m feedback.teacher.commands.bench

# Ручная проверка: JupyterLab из .venv в папке курса (её nbgrader_config.py) с formgrader nbgrader;
# браузер открывается сразу на formgrader, адрес с токеном печатается (feedback/teacher/commands/formgrader.py).
formgrader: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.formgrader

# Отчёты для учащихся заново — после ручной проверки в formgrader (ничего не выполняет); курс
# на JupyterHub — ещё и выдача готовых отчётов через exchange (nbgrader release_feedback).
feedback: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.feedback
	$(BIN)/python -m feedback.teacher.commands.hub feedback

# Курс на JupyterHub (docs/teaching.md, «Курс на JupyterHub»): make hub ROSTER=students.csv
# [HUB_PORT=8000 HUB_IP=0.0.0.0 TEACHER=teacher] запускает его на этой машине и печатает адрес и
# пароли; make hub-release LAB=7.2 — выпуск из notebooks/ в exchange, make collect — сданное в
# .course-work/submitted/ для make grade. configurable-http-proxy — из npm по hub/package-lock.json.
HUB_PROXY_DIR := .course-work/hub
HUB_PROXY := $(HUB_PROXY_DIR)/node_modules/.bin/configurable-http-proxy
# Node.js — не старше engines.node в hub/package.json (проверка — стандартной библиотекой, до
# npm: иначе npm ставил молча, а прокси падал уже при запуске хаба); --engine-strict — то же
# для каждого пакета из hub/package-lock.json.
NODE_CHECK = $(PYTHON) feedback/teacher/hub/node_version.py hub/package.json
$(HUB_PROXY): hub/package.json hub/package-lock.json
	@$(NODE_CHECK)
	@mkdir -p $(HUB_PROXY_DIR)
	cp hub/package.json hub/package-lock.json $(HUB_PROXY_DIR)/
	npm ci --prefix $(HUB_PROXY_DIR) --no-audit --no-fund --engine-strict --loglevel=error
	@touch $@

hub-proxy: $(HUB_PROXY)

hub: $(STAMP) $(HUB_PROXY)
	@$(NODE_CHECK)
	$(BIN)/python -m feedback.teacher.commands.hub start $${ROSTER:+--roster="$$ROSTER"} \
		$${HUB_PORT:+--port="$$HUB_PORT"} $${HUB_IP:+--ip="$$HUB_IP"} \
		$${TEACHER:+--teacher="$$TEACHER"} $${HUB_MODE:+--mode="$$HUB_MODE"} \
		$${HUB_PREFIX:+--prefix="$$HUB_PREFIX"}

hub-stop: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.hub stop

hub-release: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.hub release $${LAB:+-- "$$LAB"}

collect: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.hub collect

# Таблицы оценок из базы и сводка summary.html заново — после ручной проверки в formgrader (то же
# делают make feedback и make export).
summary: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.summary

# Оценки для Moodle: .course-work/export/moodle_grades.csv («Импорт оценок → CSV-файл»), отчёты —
# export/<лаб>_feedback_files.zip («Загрузить несколько файлов с отзывами в ZIP»); с
# ведомостью задания — её заполненная копия: make export WORKSHEET=ведомость.csv LAB=7.2
export: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.export $${WORKSHEET:+--worksheet="$$WORKSHEET"} \
		$${LAB:+--lab="$$LAB"}

# Публичная копия для учащихся без solutions/ и тестов: make public DEST=../course7-public
public: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.public $${DEST:+-- "$$DEST"}

check-notebooks: $(STAMP)
	$(BIN)/python -m feedback.teacher.commands.release --check

# Опыты лабораторных с памятью (7.3 float32, 7.5 батч 1, 7.6 батч 8 и 1 × 8, 7.1 генерация) на
# настоящей архитектуре Gemma 3 со случайными весами, каждый в своём процессе с памятью T4 и сроком;
# таблица, график и запись измерения — в .course-work/gpu-check/ (до 8 минут на одной карте).
# Нужен jax с CUDA: pip install -U "jax[cuda13]". Без GPU честно сообщает, что не запускался;
# GPU_CHECK_ARGS="--config tiny" — та же программа на процессоре, --list — список опытов.
gpu-check: $(STAMP)
	$(BIN)/python -m feedback.gpu.check $(GPU_CHECK_ARGS)

clean:
	rm -rf $(VENV) .course-work
