"""Наблюдение для оценивания: сторона песочницы.

При оценивании каждая ячейка-тест тетрадки заменяется одним вызовом :func:`emit`.
Он снимает наблюдение (что вернула функция учащегося на случаях, вытянутых для этого
учащегося; какие веса у модели) и показывает его как вывод ячейки особого типа
:data:`OBSERVATION_MIME`. Вердикт по наблюдению выносит программа преподавателя вне
песочницы (см. :mod:`feedback.engine.graded`), поэтому здесь нет ни эталонов, ни баллов.

Почему подделка наблюдения не даёт баллов. Всё в процессе учащегося — память, файлы,
вывод, ``sys.path``, сам этот модуль — код учащегося может прочитать и подменить. Поэтому
защита строится так, чтобы подделка ничего не давала без верного ответа:

1. *Эталонов в песочнице нет.* Верные формулы лежат в :mod:`feedback.answers`, а
   песочница видит на её месте пустую папку (как и на месте ``feedback/teacher``);
   случаи для вызова приходят снаружи, в тексте ячейки-зонда. Зонд, подменённый
   учащимся, может показать только то, что учащийся сам посчитал: универсальной
   «ячейки-отмычки», которая без знания ответа подставит эталон курса, нет.
2. *Настоящий зонд узнаваем.* Пакет курса ядро берёт только из папки для чтения
   (безопасный режим ``-P``: рабочей папки в ``sys.path`` нет); перехватчик событий
   аудита (:mod:`feedback.kernel_guard`) не даёт подложить свой ``feedback`` и
   записывает обращения к кадрам стека, ``gc``, ``ctypes``, ``exec`` и потокам в файл вне
   песочницы. Наблюдение несёт метку ``token`` этой работы, а настоящий зонд
   отмечается в записи ядра.
3. *Сомнение — не в пользу работы.* Программа оценивания
   (:func:`feedback.teacher.unit.score.subversion`) верит ровно одному наблюдению с меткой,
   после которого ячейка не упала и зонд отметился; в ответе не должно быть объектов,
   выдающих себя за число (:func:`feedback.engine.values.describe` называет подкласс ``float``
   его настоящим типом). Иначе — ноль за задание и строка в ``needs_review.csv``.

Учащийся, который вписал верную формулу сам, неотличим от того, кто её понял: для этого
— ручная проверка и список похожих ответов, а не песочница.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from feedback.engine.graded import find

OBSERVATION_MIME = "application/vnd.course7.observation+json"

#: Больше этого наблюдение не передаётся: так вывод ячейки не раздует отчёт.
MAX_OBSERVATION_CHARS = 1_000_000


def observation_payload(
    grade_id: str,
    check_name: str,
    get_objects: Callable[[], Any],
    params_json: str,
    token: str = "",
) -> dict[str, Any]:
    """Наблюдение проверки ``check_name`` для ячейки ``grade_id`` в виде JSON-объекта.

    ``token`` — метка, которую знает только программа оценивания (она в тексте ячейки
    зонда): наблюдение без неё, напечатанное заранее, не засчитывается.
    """
    params = json.loads(params_json)
    try:
        envelope = find(check_name).observe_envelope(get_objects, params, graded=True)
    except KeyboardInterrupt:
        raise  # так ядро прерывают по лимиту времени
    except BaseException as error:  # SystemExit и свои подклассы BaseException учащегося
        envelope = {"error": f"{type(error).__name__}: проверка прервана исключением"}
        envelope["interrupted"] = type(error).__name__
    text = json.dumps(envelope, ensure_ascii=False, allow_nan=False, default=str)
    if len(text) > MAX_OBSERVATION_CHARS:
        envelope = {
            "problem": {
                "headline": "ответ слишком большой, чтобы его проверить.",
                "details": ["Проверьте, что в переменной задания лежит то, что просит задание."],
            }
        }
    else:
        envelope = json.loads(text)
    return {"grade_id": grade_id, "check": check_name, "token": token, "observation": envelope}


def observation_digest(payload: Any) -> str:
    """Отпечаток наблюдения: одинаковый у зонда в ядре и у программы оценивания снаружи."""
    import hashlib

    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, allow_nan=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def emit(
    grade_id: str,
    check_name: str,
    get_objects: Callable[[], Any],
    params_json: str,
    token: str = "",
) -> None:
    """Показывает наблюдение выводом ячейки (его прочтёт программа оценивания).

    И отмечает в записи ядра (:mod:`feedback.kernel_guard`), что настоящий зонд дошёл
    до конца, с отпечатком наблюдения (:func:`observation_digest`): без отметки программа
    оценивания наблюдению не поверит, а с чужим отпечатком — значит, вывод подменили по пути.
    """
    from IPython.display import display

    payload = observation_payload(grade_id, check_name, get_objects, params_json, token)
    digest = observation_digest(payload)  # до вывода: его могли подменить по дороге
    display({OBSERVATION_MIME: payload, "text/plain": f"[наблюдение {grade_id}]"}, raw=True)
    guard = sys.modules.get("feedback.kernel_guard")
    if guard is not None:
        guard.probe_ran(grade_id, token, digest)
