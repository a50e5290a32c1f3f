"""Крошечная офлайн-модель Gemma 3 для CI и компьютеров без видеокарты.

Модуль собирает пресет Keras Hub той же архитектуры, что и настоящая Gemma 3
(``keras_hub.models.Gemma3Backbone``), но с двумя слоями и скрытым размером 64:
около 0,1 млн параметров вместо миллиардов. Токенизатор SentencePiece мы обучаем
сами на маленьком наборе вопросов и ответов из ``feedback/data``, веса случайные,
но с фиксированным зерном, поэтому две сборки дают одинаковые файлы.

Пресет загружается той же строкой, что и настоящая модель::

    model = keras_hub.models.Gemma3CausalLM.from_preset(PRESET, dtype="bfloat16")

Генерации такой модели — шум: она нужна только для того, чтобы код лабораторных
(LoRA, обучение с накоплением градиентов, генерация) выполнялся без видеокарты и
без скачивания весов с Kaggle.

Тяжёлые библиотеки (keras, keras_hub, sentencepiece) импортируются только внутри
функций, а сам модуль никогда не импортируется из ``feedback/__init__.py``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

from feedback.qa_local import load_local_qa
from feedback.settings import (
    CACHE_DIR,
    CPU_ONLY,
    KERAS_ON_JAX,
    QUIET_TENSORFLOW,
    default_keras_backend,
    set_defaults,
)

# Меняйте при любом изменении способа сборки: от версии зависит каталог кэша.
BUILDER_VERSION = 1

SEED = 812

# Специальные токены в порядке Gemma: pad=0, eos=1, bos=2, unk=3, дальше остальные.
# Gemma3Tokenizer требует <bos> <eos> <pad> <img> <start_of_image> <end_of_image>,
# а generate() останавливается на <end_of_turn>.
USER_DEFINED_SYMBOLS = (
    "<start_of_turn>",
    "<end_of_turn>",
    "<img>",
    "<start_of_image>",
    "<end_of_image>",
    "\n",
)

TOKENIZER_OPTIONS = {
    "vocab_size": 512,
    "model_type": "bpe",
    "pad_id": 0,
    "eos_id": 1,
    "bos_id": 2,
    "unk_id": 3,
    "pad_piece": "<pad>",
    "eos_piece": "<eos>",
    "bos_piece": "<bos>",
    "unk_piece": "<unk>",
    "byte_fallback": True,
    "split_digits": True,
    "normalization_rule_name": "identity",
    "remove_extra_whitespaces": False,
    "add_dummy_prefix": False,
    "character_coverage": 1.0,
    "num_threads": 1,
}

# Та же архитектура, что у gemma3_4b_text (GQA 2:1, нормализация q/k, нормы после
# внимания и MLP, скользящее окно), только крошечная.
BACKBONE_CONFIG = {
    "vocabulary_size": TOKENIZER_OPTIONS["vocab_size"],
    "image_size": 896,
    "num_layers": 2,
    "num_query_heads": 4,
    "num_key_value_heads": 2,
    "hidden_dim": 64,
    "intermediate_dim": 128,
    "head_dim": 16,
    "query_head_dim_normalize": True,
    "use_query_key_norm": True,
    "use_post_ffw_norm": True,
    "use_post_attention_norm": True,
    "attention_logit_soft_cap": None,
    "final_logit_soft_cap": None,
    "use_sliding_window_attention": True,
    "sliding_window_size": 1024,
    "local_rope_scaling_factor": 1.0,
    "global_rope_scaling_factor": 8.0,
    "vision_encoder": None,
    "layer_norm_epsilon": 1e-6,
}

SEQUENCE_LENGTH = 400

CACHE_ENV_VAR = CACHE_DIR.name
PRESET_SUBDIR = "tiny_gemma3"

# Фиксированная дата в metadata.json, чтобы две сборки давали одинаковые файлы.
FIXED_DATE_SAVED = "2025-01-01@00:00:00"


def default_cache_dir(env: dict[str, str] | None = None) -> Path:
    """Корневой каталог кэша курса: ``$COURSE7_CACHE_DIR`` или ``~/.cache/course7``."""
    return CACHE_DIR.read(env)


def tokenizer_corpus() -> list[str]:
    """Строки, на которых обучается токенизатор: наш набор QA и служебные слова формата."""
    lines = []
    for row in load_local_qa():
        lines += [row["category"], row["name"], row["question"], row["answer"]]
        lines.append(f"Category: {row['category']}")
    lines += ["user", "model"]
    return lines


def _library_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for name in ("keras", "keras-hub", "sentencepiece"):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "missing"
    return versions


def build_fingerprint() -> str:
    """Короткий хэш всего, от чего зависит содержимое пресета."""
    payload = {
        "builder": BUILDER_VERSION,
        "seed": SEED,
        "tokenizer": TOKENIZER_OPTIONS,
        "symbols": USER_DEFINED_SYMBOLS,
        "backbone": BACKBONE_CONFIG,
        "sequence_length": SEQUENCE_LENGTH,
        "corpus": tokenizer_corpus(),
        "versions": _library_versions(),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def train_tokenizer_proto() -> bytes:
    """Обучает SentencePiece-модель с токенами Gemma и возвращает её байты."""
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(tokenizer_corpus()),
        model_writer=buffer,
        user_defined_symbols=list(USER_DEFINED_SYMBOLS),
        minloglevel=2,
        **TOKENIZER_OPTIONS,
    )
    return buffer.getvalue()


def _fan_in(shape: tuple[int, ...]) -> int:
    return shape[-2] if len(shape) >= 2 else shape[0]


def _randomize_weights(backbone, seed: int) -> None:
    """Заполняет веса случайными числами из numpy с фиксированным зерном.

    Не трогаем глобальное зерно keras: пользователь задаёт его сам
    (``keras.utils.set_random_seed(812)``). Постоянные начальные значения
    (масштабы RMSNorm) оставляем как есть.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    for variable in sorted(backbone.weights, key=lambda v: v.path):
        current = np.asarray(variable.numpy())
        if current.size and np.all(current == current.flat[0]):
            continue
        std = 1.0 / np.sqrt(_fan_in(tuple(current.shape)))
        values = rng.standard_normal(current.shape) * std
        variable.assign(values.astype(current.dtype))


def build_model():
    """Собирает крошечную ``Gemma3CausalLM`` в памяти (float32, без кэша)."""
    default_keras_backend()
    import keras_hub

    # Явные имена: иначе Keras добавит «_1», «_2» при повторной сборке в том же
    # процессе, и файлы пресета перестанут совпадать.
    tokenizer = keras_hub.models.Gemma3Tokenizer(
        proto=train_tokenizer_proto(), name="gemma3_tokenizer"
    )
    preprocessor = keras_hub.models.Gemma3CausalLMPreprocessor(
        tokenizer=tokenizer,
        sequence_length=SEQUENCE_LENGTH,
        name="gemma3_causal_lm_preprocessor",
    )
    backbone = keras_hub.models.Gemma3Backbone(
        **BACKBONE_CONFIG, dtype="float32", name="gemma3_backbone"
    )
    _randomize_weights(backbone, SEED)
    return keras_hub.models.Gemma3CausalLM(
        backbone=backbone, preprocessor=preprocessor, name="gemma3_causal_lm"
    )


def _normalize_metadata(preset_dir: Path) -> None:
    path = preset_dir / "metadata.json"
    if not path.exists():
        return
    metadata = json.loads(path.read_text(encoding="utf-8"))
    if "date_saved" in metadata:
        metadata["date_saved"] = FIXED_DATE_SAVED
        path.write_text(json.dumps(metadata, indent=4) + "\n", encoding="utf-8")


def build_preset(preset_dir: str | os.PathLike) -> Path:
    """Собирает пресет в каталог ``preset_dir`` (каталог не должен существовать)."""
    preset_dir = Path(preset_dir)
    model = build_model()
    model.save_to_preset(str(preset_dir))
    _normalize_metadata(preset_dir)
    return preset_dir


def _build_in_subprocess(preset_dir: Path) -> None:
    """Собирает пресет в отдельном процессе Python.

    Так файлы совпадают байт в байт (Keras нумерует безымянные слои глобально,
    и вторая сборка в том же процессе получила бы имена «softmax_2» и т. п.),
    а процесс тетрадки не тратит память и не трогает состояние TensorFlow.
    Сборка идёт на процессоре, чтобы не занимать память видеокарты.
    """
    import subprocess
    import sys

    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env.update({**KERAS_ON_JAX, **CPU_ONLY})
    set_defaults(QUIET_TENSORFLOW, env)
    result = subprocess.run(
        [sys.executable, "-m", "feedback.gpu.tiny_gemma", str(preset_dir)],
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or not (preset_dir / "config.json").exists():
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
        raise RuntimeError(
            "Не удалось собрать крошечную модель Gemma 3 "
            f"(код выхода {result.returncode}). Последние строки вывода:\n{tail}"
        )


def tiny_preset_path(
    cache_dir: str | os.PathLike | None = None,
    env: dict[str, str] | None = None,
    isolated: bool = True,
    reuse_from: str | os.PathLike | None = None,
) -> str:
    """Возвращает каталог крошечного пресета, собирая его при первом вызове.

    Каталог: ``<кэш>/tiny_gemma3/<хэш сборки>``, где кэш — ``cache_dir``,
    ``$COURSE7_CACHE_DIR`` или ``~/.cache/course7``. Сборка (несколько секунд)
    идёт в отдельном процессе (``isolated=True``) во временный каталог, который
    затем атомарно переименовывается, поэтому прерванная сборка не оставит
    полупустой пресет. Если в другом кэше ``reuse_from`` уже лежит та же сборка,
    она копируется: сборка детерминирована, а копия — доли секунды.
    """
    root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir(env)
    fingerprint = build_fingerprint()
    target = root / PRESET_SUBDIR / fingerprint
    if (target / "config.json").exists():
        return str(target)
    built = Path(reuse_from).expanduser() / PRESET_SUBDIR / fingerprint if reuse_from else None
    target.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        if built is not None and (built / "config.json").exists():
            shutil.copytree(built, workdir / "preset")
        elif isolated:
            _build_in_subprocess(workdir / "preset")
        else:
            build_preset(workdir / "preset")
        try:
            os.replace(workdir / "preset", target)
        except OSError:
            # Другой процесс успел собрать тот же пресет: берём его.
            if not (target / "config.json").exists():
                raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return str(target)


def main(argv: list[str] | None = None) -> None:
    """``python -m feedback.gpu.tiny_gemma КАТАЛОГ`` — собрать пресет в новый каталог."""
    import argparse

    parser = argparse.ArgumentParser(description="Собрать крошечный пресет Gemma 3.")
    parser.add_argument("preset_dir", help="каталог, которого ещё нет")
    args = parser.parse_args(argv)
    build_preset(args.preset_dir)


if __name__ == "__main__":
    main()
