"""``make gpu-check``: путь лабораторной 7.5 на настоящей архитектуре Gemma 3 на CUDA.

Строит Gemma-4B (или 1B) той же архитектуры со случайными весами — скачивать ничего не
нужно, — загружает её в bfloat16, включает LoRA ранга 4 и делает несколько шагов AdamW
с накоплением градиентов. Печатает пиковую память GPU и время шага рядом с оценкой по
формулам лабораторной 7.4 для той же конфигурации. Без видеокарты честно сообщает, что
проверка не запускалась (``--config tiny`` гоняет тот же путь на процессоре для тестов).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from feedback.formatting import bytes_to_gb, format_gib, format_number, format_plain, plural
from feedback.gpu.tiny_gemma import BACKBONE_CONFIG
from feedback.settings import GPU_CHECK_XLA, default_keras_backend, set_defaults

#: Оптимизатор AdamW лабораторной 7.5 (те же числа тетрадка 7.6 показывает открыто) — тот же,
#: что ждут их проверки. Эталон этих чисел — feedback/answers/accumulation.py: GPU-среда
#: эталонов не импортирует, а совпадение с ним проверяет tests/test_gpu_check.py.
LAB_OPTIMIZER = {
    "learning_rate": 5e-5,
    "weight_decay": 0.01,
    "beta_1": 0.9,
    "beta_2": 0.95,
    "epsilon": 1e-6,
    "clipnorm": 0.5,
}

#: Конфигурации Gemma 3 (текстовые) для keras_hub.models.Gemma3Backbone. Переключатели
#: архитектуры (нормы, скользящее окно, GQA) — те же, что у крошечной модели курса.
CONFIGS = {
    "tiny": BACKBONE_CONFIG,
    "4b": {
        **BACKBONE_CONFIG,
        "vocabulary_size": 262_144,
        "num_layers": 34,
        "num_query_heads": 8,
        "num_key_value_heads": 4,
        "hidden_dim": 2560,
        "intermediate_dim": 10_240,
        "head_dim": 256,
    },
    "1b": {
        **BACKBONE_CONFIG,
        "vocabulary_size": 262_144,
        "num_layers": 26,
        "num_query_heads": 4,
        "num_key_value_heads": 1,
        "hidden_dim": 1152,
        "intermediate_dim": 6912,
        "head_dim": 256,
        "sliding_window_size": 512,
        "global_rope_scaling_factor": 1.0,
    },
}


@dataclass(frozen=True)
class Estimate:
    """Оценка памяти обучения по формулам лабораторной 7.4 (ГиБ по статьям)."""

    items: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.items.values())


def estimate_lora_training(
    total_params: int,
    trainable_params: int,
    batch_size: int,
    seq_len: int,
    num_layers: int,
    hidden_dim: int,
    accumulation: bool,
) -> Estimate:
    """Веса bf16 + вход int32 + активации bf16 + градиенты и Adam для LoRA во float32."""
    items = {
        "Веса (bfloat16)": bytes_to_gb((total_params - trainable_params) * 2),
        "Веса LoRA (float32)": bytes_to_gb(trainable_params * 4),
        "Входные данные (int32)": bytes_to_gb(batch_size * seq_len * 4),
        "Активации (упрощённо)": bytes_to_gb(batch_size * seq_len * num_layers * hidden_dim * 2),
        "Градиенты LoRA (float32)": bytes_to_gb(trainable_params * 4),
        "Состояние Adam для LoRA": bytes_to_gb(2 * trainable_params * 4),
    }
    if accumulation:
        items["Буфер накопления (float32)"] = bytes_to_gb(trainable_params * 4)
    return Estimate(items)


def _setup_environment() -> None:
    default_keras_backend()
    set_defaults(GPU_CHECK_XLA)


def _gpu_device():
    import jax

    gpus = [device for device in jax.devices() if device.platform == "gpu"]
    return gpus[0] if gpus else None


def run(config_name: str, steps: int, accumulation: int, seq_len: int, rank: int = 4) -> dict:
    """Строит модель, обучает ``steps`` микробатчей и возвращает замеры."""
    _setup_environment()
    import keras
    import keras_hub
    import numpy as np

    keras.utils.set_random_seed(812)
    config = CONFIGS[config_name]
    backbone = keras_hub.models.Gemma3Backbone(**config, dtype="bfloat16")
    model = keras_hub.models.Gemma3CausalLM(backbone=backbone, preprocessor=None)
    backbone.enable_lora(rank=rank)
    optimizer = keras.optimizers.AdamW(
        **LAB_OPTIMIZER,
        gradient_accumulation_steps=accumulation if accumulation > 1 else None,
    )
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    rng = np.random.default_rng(812)
    tokens = rng.integers(0, config["vocabulary_size"], size=(steps, seq_len + 1), dtype="int32")
    x = {"token_ids": tokens[:, :-1], "padding_mask": np.ones((steps, seq_len), dtype="int32")}
    y = tokens[:, 1:]

    times: list[float] = []

    class StepTimer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.started = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter() - self.started)

    model.fit(x, y, batch_size=1, epochs=1, verbose=0, callbacks=[StepTimer()])
    device = _gpu_device()
    peak = None
    if device is not None:
        peak = (device.memory_stats() or {}).get("peak_bytes_in_use")
    trainable = sum(int(np.prod(w.shape)) for w in backbone.trainable_weights)
    total = sum(int(np.prod(w.shape)) for w in backbone.weights)
    return {
        "config": config_name,
        "device": getattr(device, "device_kind", "CPU") if device else "CPU",
        "total_params": total,
        "trainable_params": trainable,
        "first_step_s": times[0],
        "step_s": sum(times[1:]) / max(len(times) - 1, 1),
        "peak_bytes": peak,
        "iterations": int(keras.ops.convert_to_numpy(optimizer.iterations)),
        "estimate": estimate_lora_training(
            total,
            trainable,
            1,
            seq_len,
            config["num_layers"],
            config["hidden_dim"],
            accumulation > 1,
        ),
    }


def _two_decimals(value: float) -> str:
    return format_plain(value, 2)


def report(result: dict) -> str:
    """Текстовый отчёт: замеры рядом с оценкой лабораторной 7.4."""
    lines = [
        f"Конфигурация: Gemma 3 {result['config']}, устройство: {result['device']}",
        f"Параметров: {format_number(result['total_params'])}, "
        f"обучаемых (LoRA): {format_number(result['trainable_params'])}",
        f"Шагов оптимизатора: {result['iterations']}",
        f"Первый шаг (с компиляцией XLA): {format_plain(result['first_step_s'], 2)} с; "
        f"следующие: {format_plain(result['step_s'], 3)} с на микробатч",
        "Оценка по формулам лабораторной 7.4:",
    ]
    estimate = result["estimate"]
    width = max(len(name) for name in estimate.items)
    lines += [f"  {name:<{width}}  {format_gib(gib)}" for name, gib in estimate.items.items()]
    lines.append(f"  {'Итого':<{width}}  {format_gib(estimate.total)}")
    peak = result["peak_bytes"]
    if peak is None:
        lines.append("Пиковая память GPU: не измерена (нет видеокарты).")
    else:
        measured = bytes_to_gb(peak)
        lines.append(
            f"Пиковая память GPU (замер): {format_gib(measured)} — "
            f"в {plural(measured / estimate.total, 'раз', 'раза', 'раз', _two_decimals)} "
            "больше оценки: формула "
            "лабораторной 7.4 занижает активации и не учитывает временные буферы XLA."
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m feedback.gpu.check", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--config", choices=sorted(CONFIGS), default="4b")
    parser.add_argument("--steps", type=int, default=16, help="микробатчей (по 1 примеру)")
    parser.add_argument("--accumulation", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=400)
    args = parser.parse_args(argv)
    _setup_environment()
    if args.config != "tiny" and _gpu_device() is None:
        print(
            "Видеокарта CUDA не найдена: проверка gpu-check не запускалась. "
            "Запустите `make gpu-check` на машине с GPU (или `--config tiny` для пробы на CPU)."
        )
        return 0
    result = run(args.config, args.steps, args.accumulation, args.seq_len)
    print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
