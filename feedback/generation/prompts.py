"""Лабораторная 7.1: модели курса, запросы и длины генерации — дословно как в оригинале."""

from __future__ import annotations

#: Имена моделей в курсе → пресеты Keras Hub 0.32 (предобученные, не инструктивные).
MODEL_PRESETS: dict[str, str] = {"Gemma-1B": "gemma3_1b", "Gemma-4B": "gemma3_4b_text"}

#: Первый запрос лабораторной: продолжение из 10 новых токенов.
JIDE_PROMPT = "Jide was hungry so she went looking for"

#: Десять запросов заданий 1 и 2 — дословно и в том же порядке, что в оригинале
#: (у восьмого в конце пробел).
PROMPTS: tuple[str, ...] = (
    "The tallest mountain in Africa is",
    "The key ingredients and preparation method for making traditional Nigerian Jollof rice are",
    "Wild coffee plants originated in",
    "The national flower of South Africa is",
    "The significance of the city of Marrakesh is",
    "The most populous African nation is",
    "The world's deepest river is",
    "The Maasai ethnic group originate from ",
    "The African proverb 'A roaring lion kills no game' means",
    "Braai is",
)

DEFAULT_NEW_TOKENS = 50

#: Длина запроса в токенах округляется вверх до кратной этому числу. XLA компилирует
#: генерацию заново для каждой новой длины; с округлением десяти запросам курса
#: хватает одной-двух компиляций. Модель генерирует и в добавленные позиции, и эти
#: токены отрезаются, но время на них уходит: их учитывает число вычисленных шагов.
LENGTH_STEP = 16

TOP_K = 10
SAMPLER_SEED = 812
