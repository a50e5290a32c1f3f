"""Итог проверки: вердикт, который видит учащийся, и строгий режим для оценивания.

В тетрадке результат показывается как цветная HTML-плашка, в терминале — как текст.
Если задана переменная окружения ``FEEDBACK_STRICT=1`` (CI, nbval, автопроверка
nbgrader), непройденная проверка не только показывается, но и роняет ячейку
исключением :class:`CheckFailed` с тем же текстом.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from feedback.settings import STRICT

#: Код ошибки непройденной проверки, у которой нет известной типичной ошибки (список кодов —
#: :mod:`feedback.answers.mistakes`).
UNKNOWN = "unknown"


class CheckFailed(AssertionError):
    """Проверка не пройдена в строгом режиме; текст исключения — русский вердикт."""


def strict_mode() -> bool:
    """Включён ли строгий режим (``FEEDBACK_STRICT`` равна 1, true, yes или on)."""
    return STRICT.read() is True


@dataclass(frozen=True)
class CheckResult:
    """Вердикт одной проверки.

    Истинен ровно тогда, когда ответ верный, поэтому годится для ``assert``.
    ``message`` — весь текст вердикта по-русски; ``details`` — его строки после
    заголовка (случай, ожидание, полученное значение, подсказка). ``mistake`` — код
    типичной ошибки, к которой дана подсказка (``"flops.forward_only"``, список —
    :mod:`feedback.answers.mistakes`): у непройденной проверки без известной ошибки —
    :data:`UNKNOWN`, у пройденной — ``None``. Учащийся кода не видит: по нему
    преподаватель считает, какие ошибки встречаются в классе.
    """

    title: str
    passed: bool
    headline: str
    details: tuple[str, ...] = field(default_factory=tuple)
    mistake: str | None = None

    def __post_init__(self) -> None:
        if self.passed:
            object.__setattr__(self, "mistake", None)
        elif not self.mistake:
            object.__setattr__(self, "mistake", UNKNOWN)

    def __bool__(self) -> bool:
        return self.passed

    @property
    def message(self) -> str:
        return "\n".join((self.headline, *self.details))

    def __str__(self) -> str:
        mark = "✅" if self.passed else "❌"
        lines = [f"{mark} {self.title}: {self.headline}"]
        lines += [f"   {line}" for line in self.details]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _ipython_display_(self) -> None:
        # Показываем как display_data, а не как результат ячейки («Out[n]»): так nbgrader
        # не пытается прочитать вердикт как частичный балл.
        from IPython.display import display

        display({"text/html": self._repr_html_(), "text/plain": str(self)}, raw=True)

    def _repr_html_(self) -> str:
        colour, background, mark = (
            ("#1e7b34", "#e9f7ec", "✅") if self.passed else ("#a12622", "#fdecea", "❌")
        )
        items = "".join(f"<li>{html.escape(line)}</li>" for line in self.details)
        body = f"<ul style='margin:0.3em 0 0 0'>{items}</ul>" if items else ""
        return (
            f"<div class='course7-check' data-passed='{str(self.passed).lower()}' "
            f"style='border-left:4px solid {colour};background:{background};"
            f"padding:0.5em 0.8em;margin:0.3em 0;color:#222'>"
            f"<b>{mark} {html.escape(self.title)}</b>: {html.escape(self.headline)}{body}</div>"
        )


def passed(title: str, headline: str, *details: str) -> CheckResult:
    """Вердикт «верно»."""
    return CheckResult(title, True, headline, tuple(details))


def failed(title: str, headline: str, *details: str, mistake: str | None = None) -> CheckResult:
    """Вердикт «неверно»; ``mistake`` — код типичной ошибки (без него — :data:`UNKNOWN`)."""
    return CheckResult(title, False, headline, tuple(details), mistake)


def settle(result: CheckResult) -> CheckResult:
    """Отдаёт результат; в строгом режиме непройденная проверка роняет ячейку."""
    if strict_mode() and not result.passed:
        raise CheckFailed(str(result))
    return result
