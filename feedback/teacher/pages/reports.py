"""Отчёт для учащегося: проверенная тетрадка в HTML с баллами из базы, по-русски.

То же, что ``nbgrader generate_feedback`` (те же препроцессоры и шаблон
``feedback_ru``), но для одной работы за вызов и в том же процессе: отчёт готов,
как только работа оценена, и сбой одного отчёта не мешает остальным. Заметки для
преподавателя (что посмотреть вручную, критерии оценки ответов) в отчёт не попадают, а
непроверенный письменный ответ — «ожидает проверки преподавателем», а не ноль.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from traitlets.config import Config

from feedback.teacher.core import files
from feedback.teacher.core.settings import Settings, gradebook_url, work_dir
from feedback.teacher.pages import TEMPLATES
from feedback.teacher.pages.preprocessors import ReportCleanup, ReportGrades


class ReportExporter(HTMLExporter):
    """HTMLExporter без разбора готовой страницы BeautifulSoup.

    nbconvert после шаблона разбирает всю страницу (≈ 170 КБ, почти всё — CSS) ради двух
    правок: английская подпись «No description has been provided for this image» у картинок
    без ``alt`` и ``tabindex`` у ячеек шаблона lab. В шаблоне classic, на котором стоит
    ``feedback_ru``, ячеек lab нет, а подпись к картинкам вывода по-русски ставит сам шаблон.
    Разбор занимал половину времени отчёта, а отчёт пишет основной процесс оценивания — по
    одному на каждую работу, пока единицы ждут.
    """

    def from_notebook_node(self, nb, resources=None, **kw):
        # То же, что HTMLExporter.from_notebook_node до разбора страницы (nbconvert 7.17,
        # закреплён в pyproject.toml; сверку с установленным держит tests/test_teacher_reports.py).
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        highlight = self.filters.get(
            "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)
        )
        resources = self._init_resources(resources)
        data_types = WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources
        )
        self.register_filter("highlight_code", highlight)
        self.register_filter("filter_data_type", data_types)
        return TemplateExporter.from_notebook_node(self, nb, resources, **kw)


def template_settings() -> dict[str, object]:
    """Шаблон ``feedback_ru`` и то, на чём он стоит: шаблоны и CSS formgrader из nbgrader.

    Это настройки экспортёра отчётов, а не всех HTMLExporter: в nbgrader_config.py они
    заданы для :class:`ReportExporter` (им пишет отчёты и ``nbgrader generate_feedback``),
    потому что formgrader отрисовывает работы своим HTMLExporter со своим шаблоном.
    """
    import nbgrader

    formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    return {
        "template_name": "feedback_ru",
        "extra_template_basedirs": [
            str(TEMPLATES),
            str(formgrader / "templates"),
        ],
        "extra_template_paths": [
            str(formgrader / "static" / "node_modules" / "bootstrap" / "dist" / "css")
        ],
        # Без «¶» у заголовков: ссылка «#…» в HTML-просмотрщике JupyterLab (фрейм с <base href> на
        # адрес файла) уводит фрейм на сервер; переходы по отчёту — <label for> (шаблон).
        "exclude_anchor_links": True,
        # Баллы по-русски: «2,5», «2,5 балла», «из 3 баллов».
        "filters": {
            name: f"feedback.teacher.pages.preprocessors.{function}"
            for name, function in FILTERS.items()
        },
    }


#: Фильтры шаблона отчёта (имя в шаблоне → функция в :mod:`feedback.teacher.pages.preprocessors`).
FILTERS = {"points": "points_text", "points_word": "points_word", "points_of": "points_of"}


def report_config() -> Config:
    """Настройки отчёта в своей конфигурации процесса: годятся и для HTMLExporter (сравнение
    в тестах), и для :class:`ReportExporter`, который наследует его раздел."""
    return Config({"HTMLExporter": template_settings()})


class ReportWriter:
    """Пишет отчёты ``feedback_reports/<учащийся>/<лаб>/<лаб>.html``.

    Баллы из базы читает :class:`~feedback.teacher.pages.preprocessors.ReportGrades` (GetGrades,
    который ещё отличает непроверенный ответ от нуля и собирает строку итога).
    """

    def __init__(self, work: Path) -> None:
        config = report_config()
        self.work = work
        self.exporter = ReportExporter(config=config)
        for preprocessor in (ReportCleanup, ReportGrades, CSSHTMLHeaderPreprocessor):
            self.exporter.register_preprocessor(preprocessor(config=config), enabled=True)

    def write(self, student: str, lab: str, autograded: Path) -> Path:
        notebook = nbformat.read(autograded, as_version=4)
        resources = {
            "unique_key": lab,
            "output_files_dir": f"{lab}_files",
            "nbgrader": {
                "student": student,
                "assignment": lab,
                "notebook": lab,
                "db_url": gradebook_url(self.work),
            },
        }
        body, _ = self.exporter.from_notebook_node(notebook, resources=resources)
        folder = self.work / "feedback_reports" / student / lab
        folder.mkdir(parents=True, exist_ok=True)
        return files.write_text(folder / f"{lab}.html", body)


def rewrite_all(work: Path) -> list[Path]:
    """Заново пишет все отчёты по проверенным тетрадкам и баллам из базы (после ручной проверки)."""
    writer = ReportWriter(work)
    written = []
    for path in sorted((work / "autograded").glob("*/*/*.ipynb")):
        written.append(writer.write(path.parent.parent.name, path.parent.name, path))
    return written


def main() -> int:
    """Отчёты, таблицы оценок и сводка заново: после ручной проверки в formgrader меняются все."""
    from feedback.teacher.pages import analytics
    from feedback.teacher.records import gradebook

    work = work_dir()
    written = rewrite_all(work)
    print(f"Отчёты обновлены: {len(written)} (в {work / 'feedback_reports'})")
    if (work / "gradebook.db").is_file():
        grades, by_task = gradebook.export(Settings.from_env().workspace)
        print(f"Оценки обновлены: {grades} и {by_task}; для Moodle — make export")
        summary = analytics.refresh(Settings.from_env())
        if summary is not None:
            print(f"Сводка для преподавателя обновлена: {summary}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
