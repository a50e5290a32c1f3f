"""Коды типичных ошибок курса: единственный их список.

Каждая подсказка к типичной ошибке (:class:`feedback.engine.comparing.Mistake`, подсказки
функций вердикта в этой папке и таблицы лабораторной 7.2 в :mod:`feedback.flops`) несёт свой
код, а вердикт — код той ошибки, к которой дана подсказка
(:attr:`feedback.engine.result.CheckResult.mistake`).
Учащийся кода не видит: по кодам преподаватель после ``make grade`` видит, что класс
понял не так (mistakes.csv, summary.html, mistakes.md — :mod:`feedback.teacher.pages.analytics`).

Код — ``тема.ошибка`` латиницей; у одного кода — одна подсказка, у одной подсказки — один код
(это проверяет tests/teacher/pages/test_analytics.py). Непройденная проверка без известной
ошибки получает :data:`~feedback.engine.result.UNKNOWN`, пройденная — никакого.
"""

from __future__ import annotations

from feedback.engine.calling import LearnerProblem
from feedback.engine.result import UNKNOWN

#: Работа не оценена вовсе (битый файл, упавшая единица): баллы — нули, причина — в
#: problems.csv.
NOT_ASSESSED = "not_assessed"

#: Код → короткое описание ошибки по-русски (для таблиц и страницы преподавателя).
MISTAKES: dict[str, str] = {
    UNKNOWN: "ответ неверный, но типичной ошибки не найдено (или ответа нет)",
    NOT_ASSESSED: "работа не оценена: см. problems.csv",
    # --------------------------------------------------------------- функции: аргументы
    "calling.reads_global": "функция берёт глобальную переменную лабораторной вместо аргумента",
    "calling.ignores_argument": "функция не использует один из своих аргументов",
    "calling.printed_not_returned": "функция печатает ответ (print), а возвращает None",
    # --------------------------------------------------------------- 7.2 FLOPs
    "flops.forward_only": "учтён только прямой проход: 2·P·N вместо 6·P·N",
    "flops.backward_only": "4·P·N вместо 6·P·N: только обратный проход или оценка для LoRA",
    "flops.missing_factor_6": "нет множителя 6: P·N вместо 6·P·N",
    "flops.sum_not_product": "параметры и токены сложены, а не перемножены: 6·(P + N)",
    "flops.table_missing_scenario": "в таблице нет одного из сценариев",
    "flops.table_duplicate_scenario": "сценарий в таблице повторяется",
    "flops.table_unknown_scenario": "в таблице сценарий с неизвестным названием",
    "flops.table_renamed_scenario": "сценарий в таблице назван не так, как в задании",
    "flops.table_number_as_string": "FLOPs в таблице записаны строкой, а не числом",
    "flops.table_function_not_called": "в таблице сама функция, а не её результат",
    "flops.table_wrong_inputs": "FLOPs посчитаны не от тех Parameters или Tokens",
    "flops.table_all_bert_passes": "FLOPs в таблице умножены на 40 проходов BERT из сноски",
    "flops.table_exponent_slip": "FLOPs в таблице в 10 раз не те: ошибка в показателе степени",
    "flops.time_at_peak": "время обучения посчитано по паспортному пику, без доли пика (MFU)",
    "flops.time_utilization_inverted": "доля пика (MFU) умножает FLOPs, а не делит время",
    "flops.time_in_hours": "время обучения в часах, а не в секундах",
    # --------------------------------------------------------------- 7.3 веса Gemma-4B
    "wall.bytes_not_gib": "память весов в байтах, а не в ГиБ",
    "wall.gb_not_gib": "память весов в ГБ (÷10⁹), а не в ГиБ (÷1024³)",
    "wall.mib_not_gib": "память весов в МиБ (÷1024²), а не в ГиБ",
    "wall.bfloat16_not_float32": "посчитано для bfloat16 (2 байта), а нужен float32",
    "wall.bits_not_bytes": "умножено на 32 бита вместо 4 байт",
    "wall.forgot_bytes_per_param": "забыты 4 байта на параметр",
    "wall.rounded_param_count": "взяты круглые 4 млрд параметров вместо точного числа",
    "wall.t4_memory": "вместо памяти под веса записана память T4, 15 ГиБ",
    "wall.number_as_string": "ответ записан строкой, а не числом",
    # --------------------------------------------------------------- 7.4 память GPU
    "memory.bytes_not_gib": "функция вернула байты, а не ГиБ",
    "memory.gb_not_gib": "деление на 10⁹ (ГБ) вместо 1024³ (ГиБ)",
    "memory.mib_not_gib": "деление на 1024² (МиБ) вместо 1024³ (ГиБ)",
    "memory.forgot_bytes_per_param": "забыт множитель bytes_per_param",
    "memory.forgot_bytes_per_token_id": "забыт множитель bytes_per_token_id",
    "memory.constant_bytes_per_token_id": "вместо bytes_per_token_id в формуле число 2",
    "memory.bits_not_bytes": "память весов в битах: bytes_per_param умножено на 8",
    "memory.rounded_result": "функция округляет ответ (round) вместо того, чтобы вернуть число",
    "memory.gradient_doubled": "градиенты посчитаны как два числа на параметр",
    "memory.adam_one_moment": "у Adam учтён один момент вместо двух",
    "memory.adam_with_weights": "в память оптимизатора добавлены сами веса (3·P·b)",
    "memory.adam_forgot_bytes_per_param": "в памяти Adam забыт множитель bytes_per_param",
    "memory.activation_missing_batch_size": "в активациях нет множителя batch_size",
    "memory.activation_missing_max_length": "в активациях нет множителя max_length",
    "memory.activation_missing_num_layers": "в активациях нет множителя num_layers",
    "memory.activation_missing_embedding_dim": "в активациях нет множителя embedding_dim",
    "memory.activation_missing_bytes_per_param": "в активациях нет множителя bytes_per_param",
    # --------------------------------------------------------------- 7.1 генерации
    "generation.append_result_assigned": "результат append присвоен списку: получилось None",
    "generation.single_string": "вместо списка генераций одна строка",
    "generation.list_not_cleared": "список не очищался между запусками ячейки",
    "generation.missing_generations": "генераций меньше, чем запросов",
    "generation.bytes_not_decoded": "генерации — байты, а не строки",
    "generation.list_appended": "в список добавлены списки, а не строки",
    "generation.tuple_appended": "в список добавлены кортежи, а не строки",
    "generation.wrong_prompt": "генерация начинается с чужого запроса",
    "generation.prompt_stripped": "в генерациях отрезан запрос",
    "generation.prompts_only": "в списке сами запросы без продолжений",
    # --------------------------------------------------------------- 7.5 бюджет памяти
    "budget.missing_format": "в словаре памяти под веса нет одного из форматов",
    "budget.number_as_string": "память под веса записана строкой, а не числом",
    "budget.bytes_not_gib": "память под веса в байтах, а не в ГиБ",
    "budget.gb_not_gib": "память под веса в ГБ (÷10⁹), а не в ГиБ (÷1024³)",
    "budget.mib_not_gib": "память под веса в МиБ (÷1024²), а не в ГиБ",
    "budget.wrong_bytes_per_number": "не то число байт на число: 4 вместо 2 или 2 вместо 4",
    "budget.bits_not_bytes": "умножено на число бит (32 или 16), а не байт",
    "budget.forgot_bytes_per_number": "забыт множитель — байты на число",
    "budget.rounded_param_count": "взяты круглые 4 млрд параметров вместо точного числа",
    "budget.remainder_not_weights": "записан остаток памяти на обучение, а не память под веса",
    "budget.full_training": "к весам добавлены градиенты и Adam всех параметров, как без LoRA",
    # --------------------------------------------------------------- 7.5 точность весов
    "precision.mixed_policy": "смешанная точность вместо весов в bfloat16",
    "precision.float32_left": "веса остались во float32",
    "precision.float16": "веса во float16, а не в bfloat16",
    "precision.not_bfloat16": "веса не в bfloat16",
    "dtype.float32": "для загрузки выбран float32 (или float64), а не 16-битный тип",
    "dtype.float16": "для загрузки выбран float16, а не bfloat16",
    "dtype.mixed_policy": "выбрана политика смешанной точности, а не тип весов",
    "dtype.unknown_name": "тип весов, которого Keras не знает",
    # --------------------------------------------------------------- 7.5 LoRA
    "lora.not_enabled": "LoRA не включена",
    "lora.wrong_rank": "LoRA включена с другим рангом",
    "lora.missing_layers": "LoRA включена не во всех слоях внимания",
    "lora.extra_trainable": "кроме матриц LoRA обучаются и другие веса",
    "lora.frozen": "матрицы LoRA заморожены",
    "lora.count_flat_matrices": "параметры LoRA по плоским W: одна A на матрицу, а не на голову",
    "lora.count_without_b": "в числе параметров LoRA забыты матрицы B",
    "lora.count_one_block": "параметры LoRA посчитаны для одного блока, без × число блоков",
    # --------------------------------------------------------------- 7.5, 7.6 оптимизатор
    "optimizer.adam_not_adamw": "Adam вместо AdamW",
    "optimizer.not_adamw": "оптимизатор не AdamW",
    "optimizer.lr_schedule": "расписание вместо постоянной скорости обучения",
    "optimizer.lr_sqrt_k": "скорость обучения умножена на √k, а не на k",
    "optimizer.lr_not_scaled": "скорость обучения не пересчитана под эффективный батч",
    "optimizer.lr_from_7_5": "скорость обучения из лабораторной 7.5 в 7.6",
    "optimizer.lr_from_7_5_scaled": "в 7.6 за основу взята скорость из 7.5: 5e-5 × 8 = 4e-4",
    "optimizer.lr_base_batch_from_experiment": "в 7.6 скорость — от батча 4, а не от 1: 2e-4",
    "optimizer.lr_divided": "скорость обучения поделена на 8, а не умножена: 1,25 · 10⁻⁵",
    "optimizer.lr_exponent_slip": "скорость обучения в 10 раз не та: ошибка в показателе степени",
    "optimizer.lr_with_accumulation": "скорость обучения для накопления ×8 без накопления",
    "optimizer.lr_other_lab": "скорость обучения из другой лабораторной",
    "optimizer.lr_default": "learning_rate не передан: значение Keras по умолчанию",
    "optimizer.no_clipnorm": "нет clipnorm",
    "optimizer.default_weight_decay": "weight_decay не передан: значение Keras по умолчанию",
    "optimizer.default_beta_1": "beta_1 не передан: значение Keras по умолчанию",
    "optimizer.default_beta_2": "beta_2 не передан: значение Keras по умолчанию",
    "optimizer.default_epsilon": "epsilon не передан: значение Keras по умолчанию",
    "optimizer.global_clipnorm": "global_clipnorm вместо clipnorm",
    "optimizer.clipvalue": "обрезка градиента по значению (clipvalue)",
    "optimizer.no_accumulation": "накопление градиентов не включено",
    "optimizer.unexpected_accumulation": "накопление градиентов там, где его нет",
    "optimizer.wrong_accumulation_steps": "не то число микробатчей на шаг",
    "optimizer.steps_experiment_batch": "в 7.6 физическим взят батч 4 опыта: 2 микробатча, а не 8",
    "optimizer.steps_equal_target": "микробатчей — сам эффективный батч, без деления на физический",
}


def describe(mistake: str | None) -> str:
    """Описание ошибки по коду; незнакомый код описывается как есть."""
    if not mistake:
        return ""
    return MISTAKES.get(mistake, f"незнакомый код ошибки {mistake}")


def problem(mistake: str, headline: str, *details: str) -> LearnerProblem:
    """:class:`~feedback.engine.calling.LearnerProblem` с кодом типичной ошибки для вердикта.

    Так функция вердикта называет ошибку, когда отвечает исключением:
    :meth:`feedback.engine.graded.GradedCheck.judge_envelope` переносит код в вердикт.
    """
    if mistake not in MISTAKES:
        raise KeyError(f"кода ошибки {mistake!r} нет в feedback.answers.mistakes.MISTAKES")
    found = LearnerProblem(headline, *details)
    found.mistake = mistake  # type: ignore[attr-defined]
    return found
