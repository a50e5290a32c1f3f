"""Проверка курса как пара «наблюдение → вердикт».

*Наблюдение* — то, что проверка узнаёт у объекта учащегося: что вернула его функция
на заданных случаях, какие типы у весов модели, какие параметры у оптимизатора. Это
данные JSON (см. :mod:`feedback.engine.values`). *Вердикт* — русский ответ проверки,
вынесенный только по наблюдению и параметрам проверки.

В тетрадке учащегося обе части выполняются подряд в одной ячейке. При оценивании
наблюдение снимается в песочнице с кодом учащегося (:mod:`feedback.engine.probe`), а вердикт
выносит программа преподавателя вне песочницы: ни строгий режим, ни эталонные числа, ни
сама функция вердикта там недоступны коду учащегося. Поэтому подменить вердикт нельзя —
можно только дать другой ответ, а его проверка оценит по существу.

Наблюдение и в тетрадке проходит через JSON: учащийся видит ровно тот вердикт, который
получит при оценивании.

Функции вердикта с эталонами (верными значениями, допусками, типичными ошибками) лежат в
:mod:`feedback.answers`, а проверка называет свою по имени: ``verdict("precision.judge_lora")``
(или просто строкой ``"precision.judge_lora"`` в :class:`GradedCheck`). Имя разрешается
только при вынесении вердикта. В песочнице оценивания папки эталонов нет: наблюдение там
снимается как обычно, а вердикт не выносится — :meth:`GradedCheck.judge_envelope` отвечает
непройденной проверкой (:class:`AnswersUnavailable`), и ни зачёт, ни подсказку к верному
ответу код учащегося из песочницы не получит.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import random
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from feedback.engine.calling import LearnerProblem
from feedback.engine.result import CheckResult, failed, settle

Params = Mapping[str, Any]
Envelope = dict[str, Any]

_NAME = re.compile(r"^(?P<module>[a-z_][a-z0-9_]*)\.(?P<function>check_[a-z0-9_]+)$")
#: Пакет эталонов: в песочнице оценивания на его месте пустая папка.
ANSWERS_PACKAGE = "feedback.answers"


class AnswersUnavailable(LookupError):
    """Эталонов нет: так и должно быть в песочнице оценивания."""


def reference(name: str) -> Any:
    """Объект ``"модуль.ИМЯ"`` из :mod:`feedback.answers` — только для вердикта.

    Если модуля эталонов нет (песочница оценивания) или в нём нет такого имени —
    :class:`AnswersUnavailable`. Другие ошибки импорта (ошибка в самом модуле эталонов)
    не прячутся за этим исключением.
    """
    module, _, attribute = name.partition(".")
    path = f"{ANSWERS_PACKAGE}.{module}"
    try:
        found = importlib.import_module(path)
    except ModuleNotFoundError as error:
        if error.name not in (ANSWERS_PACKAGE, path):
            raise
        raise AnswersUnavailable(f"эталон {name} недоступен: нет модуля {path}") from None
    try:
        return getattr(found, attribute)
    except AttributeError:
        raise AnswersUnavailable(f"эталон {name} недоступен: в {path} нет {attribute}") from None


@dataclass(frozen=True)
class Verdict:
    """Функция вердикта из :mod:`feedback.answers`, названная по имени: ``"модуль.функция"``.

    Вызывается как сама функция; имя разрешается при каждом вызове (модуль эталонов
    импортируется один раз), поэтому импорт проверки эталонов не трогает.
    """

    name: str

    def resolve(self) -> Callable[..., CheckResult]:
        """Сама функция вердикта или :class:`AnswersUnavailable`."""
        found = reference(self.name)
        if not callable(found):
            raise AnswersUnavailable(f"{self.name} — не функция вердикта")
        return found

    def __call__(self, observation: Any, **params: Any) -> CheckResult:
        return self.resolve()(observation, **params)


def verdict(name: str) -> Verdict:
    """Вердикт по имени функции в :mod:`feedback.answers`: ``verdict("wall.judge_weights_memory")``.

    То же, что строка ``"wall.judge_weights_memory"`` в поле ``judge`` :class:`GradedCheck`.
    """
    return Verdict(name)


@dataclass(frozen=True)
class GradedCheck:
    """Описание одной проверки.

    ``observe(*объекты, **параметры)`` возвращает наблюдение (JSON) или бросает
    :class:`~feedback.engine.calling.LearnerProblem`; ``judge(наблюдение, **параметры)``
    возвращает вердикт. ``judge`` можно задать и строкой — именем функции в
    :mod:`feedback.answers` (``"precision.judge_lora"``): тогда это :class:`Verdict`.
    ``draw(rng, параметры)`` — параметры для оценивания: например, случаи, которых
    учащийся не видел, свои у каждого учащегося.
    """

    name: str
    title: str
    observe: Callable[..., Any]
    judge: Callable[..., CheckResult] | str
    draw: Callable[[random.Random, Params], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.judge, str):
            object.__setattr__(self, "judge", Verdict(self.judge))

    def observe_envelope(
        self, get_objects: Callable[[], Any], params: Params, graded: bool = False
    ) -> Envelope:
        """Наблюдение в конверте: ``{"ok": …}``, ``{"problem": …}`` или ``{"error": …}``.

        Никогда не бросает исключений (кроме прерывания ядра): всё, что пошло не так,
        становится частью конверта. ``graded=True`` (зонд оценивания) — только обязательные
        объекты: необязательный нужен лишь подсказке, а вызывать код учащегося, за который
        баллов не ставят, внутри зонда другого задания незачем — так он не испортит и это
        наблюдение.
        """
        try:
            objects = tuple(get_objects())
            if graded:
                objects = objects[: self.required_objects()]
        except NameError as error:
            return _problem(
                f"не найдена переменная: {error}.",
                "Выполните ячейки задания выше, прежде чем запускать проверку.",
            )
        except Exception as error:
            return _problem(f"не удалось получить ответ: {type(error).__name__}: {error}")
        try:
            observation = self.observe(*objects, **params)
        except LearnerProblem as problem:
            return {"problem": {"headline": problem.headline, "details": list(problem.details)}}
        except Exception as error:
            return {"error": f"{type(error).__name__}: {error}"[:500]}
        return {"ok": observation}

    def required_objects(self) -> int:
        """Сколько объектов учащегося наблюдению обязательно (аргументы ``observe`` без
        значения по умолчанию)."""
        parameters = inspect.signature(self.observe).parameters.values()
        return sum(
            1
            for p in parameters
            if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        )

    def judge_envelope(self, envelope: Any, params: Params) -> CheckResult:
        """Вердикт по конверту; испорченный конверт — непройденная проверка, не исключение.

        Без эталонов (в песочнице оценивания) — тоже непройденная проверка, не исключение:
        так вызов из кода учащегося не даст ни зачёта, ни трассировки с путями пакета.
        """
        if not isinstance(envelope, dict):
            return self._cannot_judge("наблюдение не похоже на результат проверки")
        if "problem" in envelope:
            problem = envelope["problem"] if isinstance(envelope["problem"], dict) else {}
            details = problem.get("details")
            details = [str(item) for item in details] if isinstance(details, list) else []
            return failed(self.title, str(problem.get("headline", "ответ не проверен.")), *details)
        if "error" in envelope:
            return self._cannot_judge(str(envelope["error"]))
        if "ok" not in envelope:
            return self._cannot_judge("в наблюдении нет результата")
        try:
            return self.judge(envelope["ok"], **params)
        except AnswersUnavailable as error:
            return self._no_answers(error)
        except LearnerProblem as problem:
            # Вердикт может назвать типичную ошибку и так (feedback.answers.mistakes.problem).
            mistake = getattr(problem, "mistake", None)
            return failed(self.title, problem.headline, *problem.details, mistake=mistake)
        except Exception as error:
            return self._cannot_judge(f"{type(error).__name__}: {error}")

    def _cannot_judge(self, reason: str) -> CheckResult:
        return failed(
            self.title,
            "проверка не смогла завершиться.",
            f"Причина: {reason}",
            "Проверьте, что передали в проверку то, что просит задание; "
            "если всё верно — сообщите преподавателю.",
        )

    def _no_answers(self, error: AnswersUnavailable) -> CheckResult:
        return failed(
            self.title,
            "вердикт здесь не выносится: эталонов проверки нет.",
            "Так и задумано при оценивании: в песочнице проверка только снимает наблюдение, "
            "а вердикт по нему выносит программа преподавателя вне песочницы.",
            "Если вы видите это в своей тетрадке, сообщите преподавателю.",
            f"Причина: {error}",
        )

    def grading_params(self, rng: random.Random, params: Params) -> dict[str, Any]:
        """Параметры для оценивания: заданные в ячейке плюс вытянутые ``draw``."""
        return dict(self.draw(rng, params)) if self.draw else dict(params)


def _problem(headline: str, *details: str) -> Envelope:
    return {"problem": {"headline": headline, "details": list(details)}}


def roundtrip(envelope: Envelope) -> Envelope:
    """Конверт после JSON: то, что увидит вердикт при оценивании."""
    return json.loads(json.dumps(envelope, ensure_ascii=False, allow_nan=False))


class _OptionalObject:
    """Значение по умолчанию необязательного объекта учащегося (:data:`OPTIONAL`)."""

    def __repr__(self) -> str:
        return "OPTIONAL"


#: Значение по умолчанию у аргумента проверки, который — объект учащегося, но может и не
#: передаваться: ``check_final_results(rows, fn=OPTIONAL)``. Так ячейка-тест старого выпуска
#: без этого объекта работает и с новым пакетом.
OPTIONAL: Any = _OptionalObject()


def split_arguments(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Аргументы вызова проверки → (объекты учащегося, параметры проверки).

    Объекты — обязательные аргументы (модель, функция, список) и переданные необязательные
    объекты (по умолчанию :data:`OPTIONAL`); параметры — аргументы со значением по умолчанию
    (``rank=4``, ``cases=…``), переданные явно. Неверный вызов даёт ту же ``TypeError``, что
    и у обычной функции.
    """
    bound = signature.bind(*args, **kwargs)
    required = [
        name
        for name, parameter in signature.parameters.items()
        if parameter.default is inspect.Parameter.empty or parameter.default is OPTIONAL
    ]
    objects = tuple(bound.arguments[name] for name in required if name in bound.arguments)
    params = {name: value for name, value in bound.arguments.items() if name not in required}
    return objects, params


def graded_check(spec: GradedCheck) -> Callable[[Callable[..., Any]], Callable[..., CheckResult]]:
    """Декоратор проверки для тетрадки: наблюдение → JSON → вердикт → строгий режим.

    Тело декорируемой функции не выполняется: от неё берутся только имя, подпись и
    документация, а работу делает ``spec``. Сама проверка доступна как ``.graded``.
    """

    def decorate(signature: Callable[..., Any]) -> Callable[..., CheckResult]:
        parameters = inspect.signature(signature)

        @functools.wraps(signature)
        def check(*args: Any, **kwargs: Any) -> CheckResult:
            objects, params = split_arguments(parameters, args, kwargs)
            envelope = roundtrip(spec.observe_envelope(lambda: objects, params))
            return settle(spec.judge_envelope(envelope, params))

        check.graded = spec  # type: ignore[attr-defined]
        return check

    return decorate


def check_function(name: str) -> Callable[..., CheckResult]:
    """Проверка курса по имени из ячейки-теста: ``"flops.check_compute_num_flops"``.

    Ищется в уже импортированном модуле лабораторной (``sys.modules``): движок модулей
    лабораторных не импортирует. Импортирует модуль по имени :func:`feedback.checks.load`, а в
    ядре оценивания — сам зонд (:func:`feedback.teacher.notebook.assemble.probe_source`).
    Подменённый
    модуль или подменённая функция проверки — не проверка курса: :class:`KeyError`.
    """
    path = f"feedback.{check_module(name)}"
    module = sys.modules.get(path)
    if module is None:
        raise KeyError(f"проверки {name} нет: модуль {path} не импортирован")
    function = getattr(module, name.partition(".")[2], None)
    if not isinstance(getattr(function, "graded", None), GradedCheck):
        raise KeyError(f"в {path} нет проверки {name.partition('.')[2]}")
    return function


def find(name: str) -> GradedCheck:
    """Описание проверки (:class:`GradedCheck`) по её имени (см. :func:`check_function`)."""
    return check_function(name).graded  # type: ignore[attr-defined]


def check_module(name: str) -> str:
    """Короткое имя модуля лабораторной в имени проверки: ``"flops.check_x"`` → ``"flops"``."""
    match = _NAME.match(name)
    if not match:
        raise KeyError(f"не похоже на имя проверки курса: {name!r}")
    return match["module"]
