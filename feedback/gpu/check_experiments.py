"""``make gpu-check``: опыты лабораторных с памятью и их исполнитель в отдельном процессе.

Каждый опыт (:class:`Experiment`) — то, что делает сама лабораторная, на настоящей архитектуре
Gemma 3 со случайными весами (скачивать ничего не нужно): загрузка весов 7.3 во float32,
обучение 7.5 и 7.6 в bfloat16 с LoRA, генерация 7.1. Проверка запускает каждый опыт отдельным
процессом ``python -m feedback.gpu.check_experiments ОПЫТ.json ИТОГ.json``: так у опыта своя
память видеокарты (пул XLA или карта, остальное которой занято держателем), а зависший опыт
можно остановить по сроку, не теряя остальных.

Исполнитель пишет итог (:class:`WorkerResult`) в файл; ошибку нехватки памяти он не
толкует — это дело проверки (:func:`feedback.gpu.check.classify`). Опыт ``fake`` — для
тестов: «занимает» заданный пик в заданном бюджете и спит (или обрывает процесс, как XLA),
не трогая ни jax, ни keras.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from feedback.formatting import plural
from feedback.gpu.tiny_gemma import BACKBONE_CONFIG
from feedback.gpu.xla_memory import T4_TOTAL_BYTES
from feedback.settings import LAB_TRAINING_XLA, LAB_WALL_XLA, default_keras_backend

MIB = 1024**2

#: Оптимизатор AdamW лабораторной 7.5 (те же числа тетрадка 7.6 показывает открыто) — тот же,
#: что ждут их проверки. Эталон этих чисел — feedback/answers/accumulation.py: GPU-среда
#: эталонов не импортирует, а совпадение с ним проверяет tests/gpu/test_check.py.
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

#: Память T4, которую получает модель: 15 360 МиБ с ECC минус ≈ 300 МиБ контекста CUDA.
#: Запись 2026-12-04 задавала пул долей 0,10475 карты H200 (≈ 15 060 МиБ); JAX сообщил
#: bytes_limit 15 724 445 696 байт (≈ 14 996 МиБ).
T4_USABLE = 15_060 * MIB
#: Вся память T4 с ECC, как её видит CUDA (одно число на пакет — xla_memory).
T4_TOTAL = T4_TOTAL_BYTES
#: Пул лабораторной 7.3: её доля (LAB_WALL_XLA, 0,9) от 15 360 МиБ T4 — 13 824 МиБ.
LAB_7_3_POOL = int(float(LAB_WALL_XLA["XLA_CLIENT_MEM_FRACTION"]) * T4_TOTAL)
#: Пул обучения 7.5 и 7.6: их доля (LAB_TRAINING_XLA, 0,95) от T4 — 14 592 МиБ (14,25 ГиБ).
LAB_TRAINING_POOL = int(float(LAB_TRAINING_XLA["XLA_CLIENT_MEM_FRACTION"]) * T4_TOTAL)
#: Карта на 32 ГБ задания 2 лабораторной 7.6 (без ECC, за вычетом контекста CUDA).
CARD_32GB = 32 * 1024 * MIB - 300 * MIB
#: Контекст CUDA самого опыта: держатель оставляет бюджет плюс столько (≈ 0,3 ГиБ на T4).
CONTEXT_RESERVE = 300 * MIB

KINDS = ("load", "train", "generate", "fake")
#: Как опыт получает память T4: свой пул XLA (можно несколько сразу) или держатель остальной
#: карты (опыт на карте один).
EMULATIONS = ("pool", "held")
ALLOCATORS = ("bfc", "platform")


@dataclass(frozen=True)
class Experiment:
    """Один опыт проверки: что делать, с какой моделью, в какой памяти и сколько ждать.

    ``budget_bytes`` — память T4, которую получает опыт: размер пула XLA (``pool``) или
    свободная память, которую оставляет держатель (``held``, плюс контекст CUDA самого опыта).
    ``preallocate`` — BFC занимает пул заранее (иначе берёт память у CUDA по мере надобности).
    ``timeout_s`` — срок всего процесса: кто не ответил, тот «стена без ошибки / завис».
    """

    name: str
    lab: str
    title: str
    kind: str
    config: str
    dtype: str
    budget_bytes: int
    timeout_s: float
    emulation: str = "pool"
    allocator: str = "bfc"
    preallocate: bool = True
    batch: int = 1
    accumulation: int = 1
    seq_len: int = 0
    updates: int = 2
    prompt_tokens: int = 0
    new_tokens: int = 0
    repeats: int = 0
    fake_peak_bytes: int = 0
    fake_sleep_s: float = 0.0
    fake_abort: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.emulation not in EMULATIONS:
            raise ValueError(f"опыт {self.name}: вид {self.kind!r}, память {self.emulation!r}")
        if self.allocator not in ALLOCATORS:
            raise ValueError(f"опыт {self.name}: распределитель {self.allocator!r}")

    @property
    def max_length(self) -> int:
        """Генерация: запрос, округлённый вверх до 16 токенов (как keras-hub в 7.1), + новые."""
        return math.ceil(self.prompt_tokens / 16) * 16 + self.new_tokens

    @property
    def computed_steps(self) -> int:
        """Сколько токенов сэмплер на самом деле вычисляет: от конца запроса до max_length."""
        return self.max_length - self.prompt_tokens

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Experiment:
        return cls(**json.loads(text))


def lab_experiments() -> tuple[Experiment, ...]:
    """Опыты лабораторных на настоящих Gemma 3 4B и 1B (длина 400, LoRA ранга 4)."""
    load = dict(kind="load", lab="7.3", config="4b", dtype="float32", timeout_s=90)
    # Обучение — с памятью, как в тетрадках 7.5 и 7.6 (LAB_TRAINING_XLA): пул T4 без
    # предвыделения; стена батча 8 должна прийти ошибкой, а не ожиданием BFC.
    train = dict(
        kind="train", config="4b", dtype="bfloat16", seq_len=400, timeout_s=300, preallocate=False
    )
    generate = dict(
        kind="generate", lab="7.1", dtype="bfloat16", prompt_tokens=10, new_tokens=50, repeats=3
    )
    return (
        Experiment(
            name="w32_bfc_pool",
            title="7.3: веса float32, BFC, пул 0,9 T4 занят заранее",
            budget_bytes=LAB_7_3_POOL,
            **load,
        ),
        Experiment(
            name="w32_lab_pool",
            title="7.3: веса float32, как в тетрадке: BFC без предвыделения, доля 0,9 T4",
            budget_bytes=LAB_7_3_POOL,
            preallocate=False,
            **load,
        ),
        Experiment(
            name="w32_bfc_held",
            title="7.3: веса float32, BFC без предвыделения, остальное занято",
            budget_bytes=LAB_7_3_POOL,
            emulation="held",
            preallocate=False,
            **load,
        ),
        Experiment(
            name="w32_platform_held",
            title="7.3: веса float32, platform, остальное занято",
            budget_bytes=LAB_7_3_POOL,
            emulation="held",
            allocator="platform",
            preallocate=False,
            **load,
        ),
        Experiment(
            name="w32_platform_t4",
            title="7.3: веса float32, platform, вся T4",
            budget_bytes=T4_USABLE,
            emulation="held",
            allocator="platform",
            preallocate=False,
            **load,
        ),
        Experiment(
            name="w16_t4",
            title="7.5: только веса в bfloat16",
            budget_bytes=LAB_TRAINING_POOL,
            preallocate=False,
            **{**load, "dtype": "bfloat16", "lab": "7.5"},
        ),
        Experiment(
            name="b1_t4",
            lab="7.5",
            title="7.5: bf16 + LoRA, батч 1",
            budget_bytes=LAB_TRAINING_POOL,
            updates=3,
            **train,
        ),
        Experiment(
            name="b8_t4",
            lab="7.6",
            title="7.6: батч 8",
            budget_bytes=LAB_TRAINING_POOL,
            batch=8,
            **train,
        ),
        Experiment(
            name="b2_t4",
            lab="7.6",
            title="7.6: батч 2 (прирост памяти на пример)",
            budget_bytes=LAB_TRAINING_POOL,
            batch=2,
            **train,
        ),
        Experiment(
            name="b4_free",
            lab="7.6",
            title="7.6: батч 4 на карте 32 ГБ (задание 2)",
            budget_bytes=CARD_32GB,
            batch=4,
            **train,
        ),
        Experiment(
            name="b4_t4",
            lab="7.6",
            title="7.6: батч 4 (оригинал курса) — на грани T4",
            budget_bytes=LAB_TRAINING_POOL,
            batch=4,
            **train,
        ),
        Experiment(
            name="acc8_t4",
            lab="7.6",
            title="7.6: батч 1 × накопление 8",
            budget_bytes=LAB_TRAINING_POOL,
            accumulation=8,
            **train,
        ),
        Experiment(
            name="gen_1b",
            title="7.1: генерация Gemma-1B",
            config="1b",
            budget_bytes=T4_USABLE,
            timeout_s=240,
            **generate,
        ),
        Experiment(
            name="gen_4b",
            title="7.1: генерация Gemma-4B",
            config="4b",
            budget_bytes=T4_USABLE,
            timeout_s=300,
            **generate,
        ),
    )


#: Крошечная проверка на процессоре: та же программа, крошечная Gemma и короткие строки.
TINY_SEQ_LEN = 32
#: Срок крошечного опыта: на занятой машине CI импорт keras и компиляция идут минуту и больше.
TINY_TIMEOUT_S = 300.0


def tiny_experiments() -> tuple[Experiment, ...]:
    """Те же опыты с крошечной Gemma: длина 32, генерация 8 токенов (для тестов и CI)."""
    tiny = []
    for experiment in lab_experiments():
        changes: dict = {"config": "tiny", "timeout_s": TINY_TIMEOUT_S}
        if experiment.kind == "train":
            changes["seq_len"] = TINY_SEQ_LEN
        if experiment.kind == "generate":
            changes.update(new_tokens=8, repeats=2)
        tiny.append(replace(experiment, **changes))
    return tuple(tiny)


# --------------------------------------------------------------------------- исполнитель


@dataclass
class WorkerResult:
    """Итог опыта, как его пишет исполнитель: замеры или текст ошибки.

    ``elapsed_s`` — секунды от начала опыта (после импортов) до итога или ошибки;
    ``weights_bytes`` — память после сборки модели; ``free_at_start_bytes`` — свободная
    память карты, которую опыт увидел после запуска jax (что ему досталось);
    ``driver_used_bytes`` — насколько она уменьшилась к концу опыта по словам драйвера CUDA
    (распределитель ``platform`` статистики памяти JAX не ведёт).
    """

    ok: bool = False
    error: str = ""
    elapsed_s: float = 0.0
    device: str = ""
    build_s: float | None = None
    params: int | None = None
    trainable: int | None = None
    weights_bytes: int | None = None
    peak_bytes: int | None = None
    limit_bytes: int | None = None
    free_at_start_bytes: int | None = None
    driver_used_bytes: int | None = None
    first_step_s: float | None = None
    step_s: float | None = None
    steps: int | None = None
    iterations: int | None = None
    tokens_per_s: float | None = None

    @classmethod
    def from_json(cls, text: str) -> WorkerResult:
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


#: Сколько символов ошибки опыта сохраняется (хвост сообщения XLA с размером запроса).
ERROR_CHARS = 2000
#: Имя файла-отметки «опыт начался» рядом с файлом итога (по ней считаются секунды зависания).
STARTED_SUFFIX = ".started"


#: Начало строки этапа в журнале опыта: по последней такой строке проверка говорит, на каком
#: этапе опыт завис или упал.
STAGE_PREFIX = "gpu-check этап: "


def _stage(text: str) -> None:
    print(f"{STAGE_PREFIX}{text}", flush=True)


def _device():
    import jax

    gpus = [device for device in jax.devices() if device.platform == "gpu"]
    return gpus[0] if gpus else jax.devices()[0]


def _memory(device) -> dict:
    try:
        return device.memory_stats() or {}
    except Exception:
        return {}


def _build_backbone(experiment: Experiment):
    import keras
    import keras_hub

    keras.utils.set_random_seed(812)
    return keras_hub.models.Gemma3Backbone(**CONFIGS[experiment.config], dtype=experiment.dtype)


def _count(weights) -> int:
    import numpy as np

    return sum(int(np.prod(weight.shape)) for weight in weights)


def _train(experiment: Experiment, backbone, result: WorkerResult) -> None:
    """Обучение 7.5/7.6: LoRA ранга 4, AdamW лабораторной, ``updates`` шагов оптимизатора."""
    import keras
    import keras_hub
    import numpy as np

    model = keras_hub.models.Gemma3CausalLM(backbone=backbone, preprocessor=None)
    backbone.enable_lora(rank=4)
    accumulation = experiment.accumulation
    optimizer = keras.optimizers.AdamW(
        **LAB_OPTIMIZER, gradient_accumulation_steps=accumulation if accumulation > 1 else None
    )
    model.compile(
        optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    examples = experiment.updates * accumulation * experiment.batch
    vocabulary = CONFIGS[experiment.config]["vocabulary_size"]
    rng = np.random.default_rng(812)
    tokens = rng.integers(0, vocabulary, size=(examples, experiment.seq_len + 1), dtype="int32")
    x = {
        "token_ids": tokens[:, :-1],
        "padding_mask": np.ones((examples, experiment.seq_len), dtype="int32"),
    }
    times: list[float] = []

    class StepTimer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.started = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            if logs and "loss" in logs:
                float(logs["loss"])  # дождаться конца шага: jax считает асинхронно
            times.append(time.perf_counter() - self.started)

    examples = plural(len(tokens), "пример", "примера", "примеров")
    _stage(f"обучение: {examples}, первый шаг с компиляцией XLA")
    model.fit(
        x, tokens[:, 1:], batch_size=experiment.batch, epochs=1, verbose=0, callbacks=[StepTimer()]
    )
    result.trainable = _count(backbone.trainable_weights)
    result.first_step_s = times[0]
    result.step_s = sum(times[1:]) / len(times[1:]) if len(times) > 1 else None
    result.steps = len(times)
    result.iterations = int(keras.ops.convert_to_numpy(optimizer.iterations))


def _generate(experiment: Experiment, backbone, result: WorkerResult) -> None:
    """Генерация 7.1: запрос дополнен до кратной 16 длины, сэмплер идёт до ``max_length``.

    Скорость — по вычисленным шагам (:attr:`Experiment.computed_steps`), а не по новым
    токенам ответа: позиции, добавленные округлением, модель тоже вычисляет.
    """
    import keras_hub
    import numpy as np

    model = keras_hub.models.Gemma3CausalLM(backbone=backbone, preprocessor=None)
    model.compile(sampler="greedy")
    length, prompt = experiment.max_length, experiment.prompt_tokens
    vocabulary = CONFIGS[experiment.config]["vocabulary_size"]
    rng = np.random.default_rng(812)
    token_ids = np.zeros((1, length), dtype="int32")
    token_ids[0, :prompt] = rng.integers(4, vocabulary, size=prompt)
    inputs = {"token_ids": token_ids, "padding_mask": np.arange(length)[None, :] < prompt}
    function = model.make_generate_function()

    def timed() -> float:
        started = time.perf_counter()
        outputs = function(inputs, stop_token_ids=None)
        np.asarray(outputs["token_ids"])  # дождаться результата
        return time.perf_counter() - started

    _stage(f"генерация до длины {length}, первый вызов с компиляцией XLA")
    result.first_step_s = timed()
    _stage(f"первый вызов — {result.first_step_s:.1f} с")
    runs = [timed() for _ in range(max(experiment.repeats, 1))]
    seconds = sum(runs) / len(runs)
    result.steps = experiment.computed_steps
    result.step_s = seconds / experiment.computed_steps
    result.tokens_per_s = experiment.computed_steps / seconds


def _fake(experiment: Experiment, result: WorkerResult) -> None:
    """Опыт для тестов: пик ``fake_peak_bytes`` в бюджете ``budget_bytes`` и сон."""
    time.sleep(experiment.fake_sleep_s)
    if experiment.fake_peak_bytes > experiment.budget_bytes:
        message = (
            "RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
            f"{experiment.fake_peak_bytes} bytes (имитация)"
        )
        if experiment.fake_abort:  # как XLA, который обрывает процесс, не бросив исключения
            print(message, file=sys.stderr, flush=True)
            os._exit(134)
        raise MemoryError(message)
    result.device = "поддельная карта"
    result.peak_bytes = experiment.fake_peak_bytes
    result.limit_bytes = experiment.budget_bytes


def run_experiment(experiment: Experiment, started: Path | None = None) -> WorkerResult:
    """Выполняет опыт в этом процессе; любая ошибка — в итоге, а не исключением."""
    result = WorkerResult()
    began = time.perf_counter()
    try:
        if experiment.kind == "fake":
            _mark(started)
            began = time.perf_counter()
            _stage(
                f"имитация: пик {plural(experiment.fake_peak_bytes, 'байт', 'байта', 'байт')}, сон"
            )
            _fake(experiment, result)
        else:
            default_keras_backend()
            # Импорты — до отметки «опыт начался»: их секунды не в секундах опыта.
            import keras  # noqa: F401
            import keras_hub  # noqa: F401

            from feedback.gpu.check_card import free_bytes_now

            device = _device()
            result.device = getattr(device, "device_kind", device.platform)
            if device.platform == "gpu":
                result.free_at_start_bytes = free_bytes_now()
            _mark(started)
            began = time.perf_counter()
            _stage(f"сборка {experiment.config} в {experiment.dtype}")
            backbone = _build_backbone(experiment)
            result.build_s = time.perf_counter() - began
            _stage(f"модель собрана за {result.build_s:.1f} с")
            result.params = _count(backbone.weights)
            memory = _memory(device)
            result.weights_bytes = memory.get("bytes_in_use")
            if experiment.kind == "train":
                _train(experiment, backbone, result)
            elif experiment.kind == "generate":
                _generate(experiment, backbone, result)
            memory = _memory(device)
            result.peak_bytes = memory.get("peak_bytes_in_use")
            result.limit_bytes = memory.get("bytes_limit")
            if result.free_at_start_bytes is not None:
                free = free_bytes_now()
                if free is not None:
                    result.driver_used_bytes = result.free_at_start_bytes - free
        result.ok = True
    except Exception as error:  # итог опыта — и его ошибка: проверка решит, стена ли это
        result.error = f"{type(error).__name__}: {error}"[-ERROR_CHARS:]
    result.elapsed_s = time.perf_counter() - began
    return result


def _mark(started: Path | None) -> None:
    if started is not None:
        started.write_text(str(time.time()), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """``python -m feedback.gpu.check_experiments ОПЫТ.json ИТОГ.json``."""
    argv = sys.argv[1:] if argv is None else argv
    spec, target = Path(argv[0]), Path(argv[1])
    experiment = Experiment.from_json(spec.read_text(encoding="utf-8"))
    result = run_experiment(experiment, started=target.with_name(target.name + STARTED_SUFFIX))
    partial = target.with_name(target.name + ".part")
    partial.write_text(json.dumps(asdict(result), ensure_ascii=False), encoding="utf-8")
    os.replace(partial, target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
