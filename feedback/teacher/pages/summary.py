"""summary.html — одна страница преподавателя после ``make grade``.

По каждой лабораторной: распределение баллов и по каждому заданию автопроверки — доля
верных ответов и доля каждой типичной ошибки (диаграммы — встроенный SVG, и те же числа
таблицей). Ниже — проблемные работы, работы для ручного просмотра, похожие ответы (со
ссылками на отчёты учащихся), работы, которые ждут преподавателя, и самые долгие работы
(:func:`feedback.teacher.pages.analytics.slow_works`).

Страница говорит словами курса, а не кодом: названия лабораторных и заданий — те же, что в
отчёте учащегося (:func:`feedback.teacher.pages.analytics.titles`), ошибка — её описание из
:mod:`feedback.answers.mistakes`, числа — с десятичной запятой; идентификаторы остаются
только в подсказках (атрибут ``title``) и в атрибутах ``data-*`` для проверок.

Разметку пишет шаблон Jinja2 ``templates/summary.html.j2`` с автоэкранированием: всё, что
пришло из работ (имена учащихся и файлов, причины с цитатами кода, фрагменты ответов),
экранируется само. Страница статическая: ни одного скрипта (и политика
Content-Security-Policy запрещает их, даже если бы они туда попали), внешних ресурсов тоже
нет. Ссылки — относительные, на отчёты в feedback_reports/ и таблицы рабочей папки рядом.

Страница говорит, на когда она составлена: её пишут заново все команды, которые меняют
оценки (``make grade``, ``make feedback``, ``make export``, ``make summary`` —
:func:`feedback.teacher.pages.analytics.write_pages`), и после ручной проверки в formgrader она не
остаётся прежней. Снятые ручные оценки, чьи ответы ждут проверки снова, — с прежними баллом,
комментарием и разницей ответов (раздел «Изменённые ответы», manual_archive.csv).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from markupsafe import Markup

from feedback.formatting import format_plain, plural
from feedback.teacher.core import files
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.notebook.safe_html import CSP_META
from feedback.teacher.pages import TEMPLATES
from feedback.teacher.pages.class_data import (
    NO_CODE,
    SLOW_FACTOR,
    SLOW_SECONDS,
    ClassData,
    TaskStats,
)
from feedback.teacher.records.mistakes import mistake_description

TITLE = "Сводка оценивания курса 7"
TEMPLATE = "summary.html.j2"
PASSED_COLOUR = "#2e7d32"
#: Цвета ошибок на диаграмме заданий (палитра tab20 без зелёного «верно»).
PALETTE = (
    "#1f77b4", "#ff7f0e", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#aec7e8", "#ffbb78", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
    "#dbdb8d", "#9edae5",
)  # fmt: skip
NO_CODE_TEXT = "непройдено, но кода ошибки нет (оценено прежней версией)"


# --------------------------------------------------------------------------- числа и слова


def number(value: float | str | None, decimals: int = 2) -> str:
    """Число по-русски: «3,3», «12», «0,88» (пусто — пусто)."""
    if value in (None, ""):
        return ""
    try:
        return format_plain(float(value), decimals)
    except (TypeError, ValueError):
        return str(value)


def percent(share: float) -> str:
    return f"{share * 100:.0f} %"


def similarity_text(value: float | str | None) -> str:
    """Сходство пары из similar.csv (0…1) процентами: «88 %»."""
    try:
        return percent(float(value or 0))
    except (TypeError, ValueError):
        return str(value)


def ranked(counts: Counter) -> list[tuple[str, int]]:
    """Ошибки задания: самые частые первыми, при равенстве — по коду (те же байты)."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def mistake_text(mistake: str) -> str:
    """Описание ошибки по-русски (код — только в подсказке страницы)."""
    return NO_CODE_TEXT if mistake == NO_CODE else mistake_description(mistake)


def short_title(title: str) -> str:
    """«Лабораторная 7.2» из «Лабораторная 7.2. Оцените FLOPs обучения» — для оглавления."""
    head, dot, _ = title.partition(". ")
    return head if dot else title


def report_href(workspace: Workspace, student: str, lab: str) -> str | None:
    """Ссылка на отчёт учащегося относительно рабочей папки (там лежит summary.html) или
    ``None``, если отчёта нет (или имя выводит за папку отчётов)."""
    if not student or student == "?" or not lab or lab == "?":
        return None
    reports = workspace.feedback_reports.resolve()
    report = workspace.learner_report(student, lab)
    if reports not in report.resolve().parents or not report.is_file():
        return None
    return "/".join(quote(part, safe="") for part in report.relative_to(workspace.folder).parts)


# --------------------------------------------------------------------------- диаграммы


@dataclass(frozen=True)
class Rect:
    """Прямоугольник диаграммы: где он, какого цвета и что сказать при наведении."""

    x: float
    y: float
    width: float
    height: float
    colour: str
    tip: str


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str
    anchor: str = "middle"
    tip: str = ""


@dataclass(frozen=True)
class Chart:
    """Встроенный SVG: размеры, полосы, подписи и строки легенды (цвет, текст, код)."""

    width: int
    height: int
    title: str
    rects: tuple[Rect, ...]
    labels: tuple[Label, ...]
    axis: tuple[float, float, float, float] = (0, 0, 0, 0)
    legend: tuple[tuple[str, str, str], ...] = ()


def score_chart(title: str, scores: Sequence[tuple[float, float]]) -> Chart:
    """Распределение баллов: столбец на каждый балл от 0 до максимума (шаг 1 или 0,5)."""
    top = max((maximum for _, maximum in scores), default=0.0)
    halves = any(round(score * 2) % 2 for score, _ in scores) or top != int(top)
    step = 0.5 if halves else 1.0
    counts = Counter(round(score / step) * step for score, _ in scores)
    values = [index * step for index in range(round(top / step) + 1)] or [0.0]
    width, height, left, bottom, top_pad = 640, 210, 36, 40, 20
    slot = (width - left - 10) / len(values)
    highest = max(counts.values(), default=1)
    plot = height - bottom - top_pad
    rects, labels = [], []
    for index, value in enumerate(values):
        count = counts.get(value, 0)
        bar = plot * count / highest if highest else 0
        x = left + index * slot
        shown = number(value)
        works = plural(count, "работа", "работы", "работ")
        if count:
            rects.append(
                Rect(x + slot * 0.1, top_pad + plot - bar, slot * 0.8, bar, "#1f77b4",
                     f"{shown} из {number(top)}: {works}")
            )  # fmt: skip
            labels.append(Label(x + slot / 2, top_pad + plot - bar - 4, str(count)))
        labels.append(Label(x + slot / 2, height - bottom + 16, shown))
    labels.append(Label(left + (width - left) / 2, height - 6, f"баллы (из {number(top)})"))
    return Chart(
        width,
        height,
        f"{title}: распределение баллов",
        tuple(rects),
        tuple(labels),
        (left, top_pad + plot, width - 10, top_pad + plot),
    )


#: Сколько символов названия задания помещается слева от полос.
LABEL_CHARS = 44


def task_chart(data: ClassData, lab: str, tasks: Sequence[TaskStats]) -> Chart:
    """Доля верных ответов и каждой ошибки по заданиям — полосы с накоплением."""
    mistakes: Counter = Counter()
    for stats in tasks:
        mistakes.update(stats.mistakes)
    order = [mistake for mistake, _ in sorted(mistakes.items(), key=lambda i: (-i[1], i[0]))]
    colours = {mistake: PALETTE[index % len(PALETTE)] for index, mistake in enumerate(order)}
    row, left, bar_width = 26, 320, 560
    shown = [stats for stats in tasks if stats.total]
    height = row * len(shown) + 30
    rects, labels = [], []
    for index, stats in enumerate(shown):
        y = 6 + index * row
        name = data.task_title(lab, stats.task)
        cut = name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"
        labels.append(Label(left - 8, y + row / 2 + 4, cut, "end", f"{name} ({stats.task})"))
        x = float(left)
        parts = [("верно", PASSED_COLOUR, stats.passed)]
        parts += [(m, colours[m], stats.mistakes[m]) for m in order if stats.mistakes.get(m)]
        for what, colour, count in parts:
            share = count / stats.total
            text = "верно" if what == "верно" else f"{mistake_text(what)} ({what})"
            tip = f"{name}: {text} — {count} из {stats.total} ({percent(share)})"
            rects.append(Rect(x, y + 3, bar_width * share, row - 8, colour, tip))
            x += bar_width * share
    for tick in (0.0, 0.5, 1.0):
        labels.append(Label(left + bar_width * tick, height - 6, percent(tick)))
    legend = [(PASSED_COLOUR, "верно", "")]
    legend += [(colours[m], mistake_text(m), m) for m in order]
    return Chart(
        left + bar_width + 20,
        height,
        f"{data.lab_title(lab)}: верные ответы и типичные ошибки",
        tuple(rects),
        tuple(labels),
        (left, height - 22, left + bar_width, height - 22),
        tuple(legend),
    )


# --------------------------------------------------------------------------- страница


@functools.cache
def environment():
    """Окружение Jinja2 шаблонов страниц курса: автоэкранирование HTML, строгие имена."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(number=number, percent=percent, mistake=mistake_text)
    env.globals.update(
        plural=plural, short_title=short_title, ranked=ranked, similarity=similarity_text
    )
    return env


def render(data: ClassData, workspace: Workspace) -> str:
    """Вся страница."""
    labs = [lab for lab in data.labs if data.scores.get(lab) or data.works(lab)]
    sections = []
    for lab in labs:
        scores = data.scores.get(lab, [])
        tasks = data.tasks.get(lab, [])
        sections.append(
            {
                "lab": lab,
                "title": data.lab_title(lab),
                "works": len(scores),
                "mean": sum(s for s, _ in scores) / len(scores) if scores else None,
                "top": max((m for _, m in scores), default=0.0),
                "score_chart": score_chart(data.lab_title(lab), scores) if scores else None,
                "task_chart": task_chart(data, lab, tasks) if any(s.total for s in tasks) else None,
                "tasks": tasks,
                "learners": data.works(lab),
                "top_mistakes": data.top_mistakes(lab),
                "not_attempted": data.not_attempted(lab),
            }
        )

    def href(student: str | None, lab: str | None) -> str | None:
        return report_href(workspace, student or "", lab or "")

    page = (
        environment()
        .get_template(TEMPLATE)
        .render(
            title=TITLE,
            csp=Markup(CSP_META),
            data=data,
            sections=sections,
            works=sum(len(data.scores.get(lab, [])) for lab in data.labs),
            href=href,
            slow_seconds=SLOW_SECONDS,
            slow_factor=SLOW_FACTOR,
        )
    )
    return page


def write_summary(workspace: Workspace, data: ClassData) -> Path:
    """Пишет summary.html в рабочую папку (ссылки — относительно неё)."""
    files.write_text(workspace.summary, render(data, workspace))
    return workspace.summary
