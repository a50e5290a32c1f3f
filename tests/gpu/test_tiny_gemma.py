"""Тесты крошечной офлайн-модели Gemma 3.

Тяжёлые тесты (сборка, загрузка, LoRA, обучение, генерация) пропускаются, если не
установлены keras_hub и sentencepiece (extra ``gpu``). Бэкенд Keras — JAX: его надо
выбрать до первого импорта keras.
"""

import hashlib
from pathlib import Path

import pytest

from feedback.gpu import tiny_gemma
from feedback.settings import default_keras_backend

default_keras_backend()  # Keras на JAX, как в тетрадках: до первого import keras

#: Один процесс xdist на модули с keras и крошечной Gemma в самом процессе тестов: импорт
#: TensorFlow стоит секунды процессора, а скомпилированные программы JAX остаются в процессе.
pytestmark = pytest.mark.xdist_group("keras_in_process")


HEAVY_REASON = "нужны keras_hub и sentencepiece (pip install -e '.[gpu]')"


def file_hashes(directory):
    root = Path(directory)
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


# --------------------------------------------------------------------------- лёгкие тесты


def test_cache_dir_default_and_override(tmp_path):
    assert tiny_gemma.default_cache_dir({"COURSE7_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert tiny_gemma.default_cache_dir({}) == Path.home() / ".cache" / "course7"


def test_fingerprint_is_stable_and_short():
    first = tiny_gemma.build_fingerprint()
    assert first == tiny_gemma.build_fingerprint()
    assert len(first) == 16 and int(first, 16) >= 0


def test_corpus_contains_prompt_format_words():
    corpus = tiny_gemma.tokenizer_corpus()
    assert {"user", "model", "Category: Culture"} <= set(corpus)


def test_config_mirrors_gemma3():
    config = tiny_gemma.BACKBONE_CONFIG
    assert config["num_layers"] == 2 and config["hidden_dim"] == 64
    assert config["vision_encoder"] is None
    assert config["num_query_heads"] % config["num_key_value_heads"] == 0


# --------------------------------------------------------------------------- тяжёлые тесты


@pytest.fixture(scope="session")
def heavy():
    pytest.importorskip("sentencepiece", reason=HEAVY_REASON)
    return pytest.importorskip("keras_hub", reason=HEAVY_REASON)


@pytest.fixture(scope="session")
def preset(heavy):
    """Пресет из обычного кэша курса: в make test его уже собрал отдельный процесс до решений."""
    return tiny_gemma.tiny_preset_path()


def test_tokenizer_has_gemma_special_tokens():
    spm = pytest.importorskip("sentencepiece", reason=HEAVY_REASON)
    processor = spm.SentencePieceProcessor(model_proto=tiny_gemma.train_tokenizer_proto())
    pieces = [processor.id_to_piece(i) for i in range(10)]
    assert pieces[:4] == ["<pad>", "<eos>", "<bos>", "<unk>"]
    assert set(tiny_gemma.USER_DEFINED_SYMBOLS) <= set(pieces)
    text = "<start_of_turn>user\nЧто такое кенте? 42<end_of_turn>\n"
    assert processor.decode(processor.encode(text)) == text  # байтовый запасной путь


def test_build_is_cached_and_deterministic(preset, tmp_path):
    path = Path(preset)
    assert path.name == tiny_gemma.build_fingerprint()
    assert {"config.json", "model.weights.h5", "assets"} <= {p.name for p in path.iterdir()}
    assert tiny_gemma.tiny_preset_path(cache_dir=path.parents[1]) == preset  # из кэша

    second = tiny_gemma.tiny_preset_path(env={"COURSE7_CACHE_DIR": str(tmp_path)})
    assert second.startswith(str(tmp_path))
    assert not [p for p in Path(second).parent.iterdir() if p.name.startswith(".building-")]
    assert file_hashes(second) == file_hashes(preset)  # вторая, независимая сборка — та же


def test_notebook_flow(preset, heavy):
    """Загрузка в bf16, LoRA ранга 4, 2 шага AdamW с накоплением градиентов, генерация."""
    import keras
    import numpy as np

    from feedback.qa_data import build_training_data, format_question, load_local_qa

    # Зерно задаём ДО загрузки: tf.random.set_seed после создания токенизатора
    # уничтожает ресурс SentencePiece в TensorFlow, и fit падает с NotFoundError.
    keras.utils.set_random_seed(812)
    model = heavy.models.Gemma3CausalLM.from_preset(preset, dtype="bfloat16")
    attention = model.backbone.get_layer("decoder_block_0").attention
    assert attention.query_dense.kernel.dtype == "bfloat16"
    assert 50_000 < model.backbone.count_params() < 200_000

    tokenizer = model.preprocessor.tokenizer
    assert tokenizer.token_to_id("<end_of_turn>") == 5
    assert tokenizer.token_to_id("<start_of_turn>") == 4

    model.backbone.enable_lora(rank=4)
    trainable = model.trainable_weights
    assert trainable and all("lora_kernel" in w.path for w in trainable)
    # После enable_lora свойство kernel = W + A·B; замороженная матрица W — _kernel.
    frozen = attention.query_dense._kernel
    assert not frozen.trainable
    frozen_before = np.asarray(frozen.numpy(), dtype="float32")
    lora_b = next(w for w in trainable if w.path.endswith("query/lora_kernel_b"))
    assert not np.any(lora_b.numpy())

    model.preprocessor.sequence_length = 64
    optimizer = keras.optimizers.AdamW(
        learning_rate=8e-4,
        weight_decay=0.01,
        beta_1=0.9,
        beta_2=0.95,
        epsilon=1e-6,
        clipnorm=0.5,
        gradient_accumulation_steps=8,
    )
    model.compile(optimizer=optimizer)
    data = build_training_data(load_local_qa()[:16])
    history = model.fit(data, epochs=1, batch_size=1, verbose=0)
    assert int(optimizer.iterations) == 2  # 16 микробатчей / 8
    assert np.isfinite(history.history["loss"][-1])
    assert np.any(lora_b.numpy())
    frozen_after = np.asarray(frozen.numpy(), dtype="float32")
    np.testing.assert_array_equal(frozen_before, frozen_after)

    prompt = format_question("What is Kente cloth?")
    output = model.generate(prompt, max_length=32)
    assert isinstance(output, str) and output.startswith(prompt)
