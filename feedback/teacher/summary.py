"""summary.html — одна страница преподавателя после ``make grade``.

По каждой лабораторной: распределение баллов и по каждому заданию автопроверки — доля
верных ответов и доля каждой типичной ошибки (диаграммы matplotlib, бэкенд Agg, вставлены
картинками PNG в base64, и те же числа таблицей). Ниже — проблемные работы, работы для
ручного просмотра, похожие ответы (со ссылками на отчёты учащихся), работы, которые ждут
ручной проверки, и самые долгие работы (:func:`feedback.teacher.analytics.slow_works`).

Страница статическая: ни одного скрипта (и политика Content-Security-Policy запрещает их,
даже если бы они туда попали), внешних ресурсов тоже нет. Всё, что пришло из работ (имена
учащихся и файлов, причины с цитатами кода, фрагменты ответов), экранируется
:func:`html.escape`. Ссылки — относительные, на отчёты в feedback_reports/ рядом. Даты на
странице нет: те же итоги дают те же байты (как и остальные таблицы оценивания).
"""

from __future__ import annotations

import base64
import html
import io
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import quote

from feedback.answers.mistakes import describe
from feedback.formatting import plural
from feedback.teacher import files
from feedback.teacher.class_data import NO_CODE, SLOW_FACTOR, SLOW_SECONDS, ClassData, TaskStats
from feedback.teacher.safe_html import CSP_META

TITLE = "Сводка оценивания курса 7"
#: Политика страницы: только встроенные стили и картинки data:, никаких скриптов и сети.
PASSED_COLOUR = "#2e7d32"
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222;
       padding: 0 1em; line-height: 1.4; }
h1 { margin-bottom: 0.2em; }
h2 { border-bottom: 2px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.number { text-align: right; white-space: nowrap; }
tr.task td { background: #fafafa; font-weight: 600; }
code { background: #f4f4f4; padding: 0 0.2em; }
.charts img { max-width: 100%; display: block; margin: 0.5em 0; border: 1px solid #eee; }
.muted { color: #666; }
nav a { margin-right: 1em; }
"""


def _e(value: object) -> str:
    """Экранирует текст для HTML (и для значений атрибутов в кавычках)."""
    return html.escape("" if value is None else str(value), quote=True)


def _percent(share: float) -> str:
    return f"{share * 100:.0f} %"


def report_link(work: Path, student: str, lab: str, text: str | None = None) -> str:
    """Ссылка на отчёт учащегося (относительная) или просто имя, если отчёта нет."""
    label = _e(text if text is not None else student)
    if not student or student == "?" or not lab or lab == "?":
        return label
    reports = (work / "feedback_reports").resolve()
    path = (reports / student / lab / f"{lab}.html").resolve()
    if reports not in path.parents or not path.is_file():
        return label
    href = "/".join(
        quote(part, safe="") for part in ("feedback_reports", student, lab, f"{lab}.html")
    )
    return f'<a href="{_e(href)}">{label}</a>'


# --------------------------------------------------------------------------- диаграммы


def _png(figure) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    # Без метаданных: та же сводка — те же байты (make grade с JOBS=1, 2 и Dask сравниваются).
    figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight", metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def score_chart(lab: str, scores: Sequence[tuple[float, float]]) -> str:
    """Распределение баллов лабораторной: сколько работ набрали сколько баллов (PNG base64)."""
    from matplotlib.figure import Figure

    counts = Counter(round(score * 2) / 2 for score, _ in scores)
    top = max((maximum for _, maximum in scores), default=0.0)
    values = sorted(set(counts) | {0.0, top})
    figure = Figure(figsize=(6, 2.6))
    axes = figure.add_subplot()
    axes.bar([f"{value:g}" for value in values], [counts.get(value, 0) for value in values])
    axes.set_xlabel(f"баллы (из {top:g})")
    axes.set_ylabel("работ")
    axes.set_title(f"{lab}: распределение баллов")
    axes.yaxis.get_major_locator().set_params(integer=True)
    return _png(figure)


def task_chart(lab: str, tasks: Sequence[TaskStats]) -> str:
    """Доля верных ответов и каждой ошибки по заданиям — полосы с накоплением (PNG base64)."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    mistakes = Counter()
    for stats in tasks:
        mistakes.update(stats.mistakes)
    order = [mistake for mistake, _ in mistakes.most_common()]
    colours = colormaps["tab20"]
    figure = Figure(figsize=(8, 0.55 * len(tasks) + 1.6))
    axes = figure.add_subplot()
    names = [stats.task for stats in tasks][::-1]
    stacked = [stats.pass_rate for stats in tasks][::-1]
    axes.barh(names, stacked, color=PASSED_COLOUR, label="верно")
    for index, mistake in enumerate(order):
        shares = [stats.share(mistake) for stats in tasks][::-1]
        axes.barh(names, shares, left=stacked, color=colours(index % 20), label=mistake)
        stacked = [a + b for a, b in zip(stacked, shares, strict=True)]
    axes.set_xlim(0, 1)
    axes.set_xlabel("доля работ")
    axes.set_title(f"{lab}: верные ответы и типичные ошибки")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2, fontsize=8)
    return _png(figure)


# --------------------------------------------------------------------------- разделы


def _table(header: Iterable[str], rows: Iterable[Iterable[str]], empty: str) -> str:
    """Таблица из уже экранированных ячеек; без строк — абзац ``empty``."""
    body = ["<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows]
    if not body:
        return f'<p class="muted">{_e(empty)}</p>'
    head = "<tr>" + "".join(f"<th>{_e(name)}</th>" for name in header) + "</tr>"
    return "<table>" + head + "".join(body) + "</table>"


def _task_rows(tasks: Sequence[TaskStats]) -> str:
    rows = []
    for stats in tasks:
        rows.append(
            f'<tr class="task" data-lab="{_e(stats.lab)}" data-task="{_e(stats.task)}" '
            f'data-total="{stats.total}" data-passed="{stats.passed}" '
            f'data-pass-rate="{stats.pass_rate:.6f}">'
            f"<td>{_e(stats.task)}</td><td>верно</td><td></td>"
            f'<td class="number">{stats.passed} из {stats.total}</td>'
            f'<td class="number">{_percent(stats.pass_rate)}</td></tr>'
        )
        for mistake, count in sorted(stats.mistakes.items(), key=lambda item: (-item[1], item[0])):
            description = (
                "непройдено, но кода ошибки нет (оценено прежней версией)"
                if mistake == NO_CODE
                else describe(mistake)
            )
            rows.append(
                f'<tr class="mistake" data-lab="{_e(stats.lab)}" data-task="{_e(stats.task)}" '
                f'data-mistake="{_e(mistake)}" data-count="{count}" data-total="{stats.total}" '
                f'data-share="{stats.share(mistake):.6f}">'
                f"<td></td><td><code>{_e(mistake)}</code></td><td>{_e(description)}</td>"
                f'<td class="number">{count} из {stats.total}</td>'
                f'<td class="number">{_percent(stats.share(mistake))}</td></tr>'
            )
    head = "".join(f"<th>{name}</th>" for name in ("Задание", "Итог", "Ошибка", "Работ", "Доля"))
    return f'<table class="tasks"><tr>{head}</tr>{"".join(rows)}</table>'


def _lab_section(data: ClassData, lab: str) -> str:
    scores = data.scores.get(lab, [])
    tasks = data.tasks.get(lab, [])
    if not scores and not any(stats.total for stats in tasks):
        return ""
    parts = [f'<section id="{_e(lab)}"><h2>{_e(lab)}</h2>']
    if scores:
        mean = sum(score for score, _ in scores) / len(scores)
        top = max(maximum for _, maximum in scores)
        parts.append(
            f"<p>{plural(len(scores), 'работа', 'работы', 'работ')}, средний балл "
            f"{mean:.1f} из {top:g}.</p>"
        )
    charts = []
    if scores:
        charts.append(
            f'<img alt="{_e(lab)}: распределение баллов" '
            f'src="data:image/png;base64,{score_chart(lab, scores)}">'
        )
    if any(stats.total for stats in tasks):
        charts.append(
            f'<img alt="{_e(lab)}: верные ответы и ошибки по заданиям" '
            f'src="data:image/png;base64,{task_chart(lab, tasks)}">'
        )
    parts.append('<div class="charts">' + "".join(charts) + "</div>")
    if tasks:
        parts.append("<h3>Задания автопроверки</h3>" + _task_rows(tasks))
    top = data.top_mistakes(lab)
    if top:
        items = "".join(
            f"<li><b>{_e(describe(mistake))}</b> (<code>{_e(mistake)}</code>) — {count}"
            + (f"<br><span class='muted'>Подсказка: {_e(hint)}</span>" if hint else "")
            + "</li>"
            for mistake, count, hint in top
        )
        parts.append(f"<h3>Частые ошибки</h3><ol>{items}</ol>")
    parts.append("</section>")
    return "".join(parts)


def _section(
    anchor: str, title: str, header: list[str], rows: list[list[str]], empty: str, intro: str = ""
) -> str:
    """Раздел страницы: заголовок, пояснение ``intro`` (готовый HTML) и таблица."""
    return (
        f'<section id="{anchor}"><h2>{_e(title)}</h2>'
        + (f'<p class="muted">{intro}</p>' if intro else "")
        + _table(header, rows, empty)
        + "</section>"
    )


def _lists(data: ClassData, work: Path) -> str:
    def link(row: dict, student_key: str = "student_id") -> str:
        return report_link(work, row.get(student_key, ""), row.get("lab", ""))

    problems = [
        [link(row), _e(row.get("lab")), _e(row.get("file")), _e(row.get("problem"))]
        for row in data.problems
    ]
    review = [
        [
            link(row),
            _e(row.get("lab")),
            _e(row.get("cell")),
            _e(row.get("line")),
            f"<code>{_e(row.get('code'))}</code>" if row.get("code") else "",
            _e(row.get("reason")),
        ]
        for row in data.review
    ]
    similar = [
        [
            _e(row.get("lab")),
            _e(row.get("task")),
            link(row, "student_a"),
            link(row, "student_b"),
            _e(row.get("similarity")),
            f"<code>{_e(row.get('fragment'))}</code>",
        ]
        for row in data.similar
    ]
    pending = [
        [link(item), _e(item["lab"]), _e(", ".join(item["tasks"])), _e(f"{item['points']:g}")]
        for item in data.pending
    ]
    slowest = [[link(row), _e(row.get("lab")), _e(row.get("seconds"))] for row in data.slowest]
    return "".join(
        [
            _section(
                "problems",
                "Проблемные работы",
                ["Учащийся", "Лабораторная", "Файл", "Проблема"],
                problems,
                "Проблем нет.",
            ),
            _section(
                "review",
                "Посмотреть вручную",
                ["Учащийся", "Лабораторная", "Ячейка", "Строка", "Код", "Причина"],
                review,
                "Подозрительного кода не найдено.",
            ),
            _section(
                "similar",
                "Похожие ответы",
                [
                    "Лабораторная",
                    "Задание",
                    "Учащийся A",
                    "Учащийся B",
                    "Сходство",
                    "Общий фрагмент",
                ],
                similar,
                "Похожих ответов не найдено.",
                "Пары почти одинаковых ответов на одно задание (сходство отпечатков winnowing "
                "после замены имён и без текста шаблона). Это повод посмотреть, а не "
                "доказательство списывания.",
            ),
            _section(
                "pending",
                "Ждут ручной проверки",
                ["Учащийся", "Лабораторная", "Задания", "Баллов"],
                pending,
                "Все работы проверены.",
            ),
            _section(
                "slowest",
                "Самые долгие работы",
                ["Учащийся", "Лабораторная", "Секунд"],
                slowest,
                "Долгих работ нет.",
                f"Не меньше {SLOW_SECONDS:g} с и в "
                f"{plural(SLOW_FACTOR, 'раз', 'раза', 'раз')} дольше медианы своей "
                "лабораторной (все секунды — в timings.csv).",
            ),
        ]
    )


def render(data: ClassData, work: Path) -> str:
    """Вся страница."""
    labs = [lab for lab in data.labs if data.scores.get(lab)]
    works = sum(len(data.scores.get(lab, [])) for lab in data.labs)
    navigation = "".join(f'<a href="#{_e(lab)}">{_e(lab)}</a>' for lab in labs)
    navigation += "".join(
        f'<a href="#{anchor}">{name}</a>'
        for anchor, name in (
            ("problems", "Проблемы"),
            ("review", "Посмотреть вручную"),
            ("similar", "Похожие ответы"),
            ("pending", "Ждут проверки"),
            ("slowest", "Долгие"),
        )
    )
    body = "".join(_lab_section(data, lab) for lab in data.labs)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="ru"><head><meta charset="utf-8">'
        f"{CSP_META}"
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_e(TITLE)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{_e(TITLE)}</h1>"
        f'<p class="muted">По итогам всех запусков make grade: '
        f"{plural(works, 'работа', 'работы', 'работ')}. Подробности — в таблицах рабочей "
        "папки: mistakes.csv, similar.csv, problems.csv, needs_review.csv, timings.csv.</p>"
        f"<nav>{navigation}</nav>{body}{_lists(data, work)}</body></html>\n"
    )


def write_summary(path: Path, data: ClassData) -> Path:
    """Пишет summary.html в рабочую папку (ссылки — относительно неё)."""
    files.write_text(path, render(data, path.parent))
    return path
