"""GenerationMonitor и графики потерь лабораторных 7.5 и 7.6.

Быстрые тесты работают с поддельной моделью; один тяжёлый тест обучает крошечную
Gemma 3 одну эпоху с монитором. Зерно задаём ДО ``from_preset``: иначе ``fit``
падает с NotFoundError ресурса SentencePiece (см. tests/gpu/test_tiny_gemma.py).
"""

import matplotlib
import pytest

matplotlib.use("Agg")

from feedback import monitor
from feedback.qa_data import format_question
from feedback.settings import default_keras_backend

default_keras_backend()  # Keras на JAX, как в тетрадках: до первого import keras

#: Один процесс xdist на модули с keras и крошечной Gemma в самом процессе тестов: импорт
#: TensorFlow стоит секунды процессора, а скомпилированные программы JAX остаются в процессе.
pytestmark = pytest.mark.xdist_group("keras_in_process")


HEAVY_REASON = "нужны keras_hub и sentencepiece (pip install -e '.[gpu]')"
KERAS_REASON = "нужен keras с бэкендом JAX (pip install -e '.[tiny]')"


# --------------------------------------------------------------------------- лёгкие тесты


def test_monitor_class_is_listed_without_building_it():
    """Класс виден в dir(), но сам модуль keras не импортирует (см. test_environment)."""
    assert "GenerationMonitor" in dir(monitor)


def test_lab_prompts_are_wrapped_questions():
    prompts = monitor.lab_prompts()
    assert prompts == [format_question(q) for q in monitor.LAB_QUESTIONS]
    assert prompts[0] == "<start_of_turn>user\nWhat is Kente cloth?<end_of_turn>\n"


def test_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError):
        monitor.NoSuchThing  # noqa: B018


class FakeModel:
    """Модель, которая «генерирует» запрос плюс номер вызова."""

    def __init__(self):
        self.calls = []

    def generate(self, prompt, max_length):
        self.calls.append((prompt, max_length))
        if prompt == "boom":
            raise ValueError("сломалось")
        return f"{prompt} → ответ {len(self.calls)}"


@pytest.fixture(scope="module")
def keras():
    pytest.importorskip("jax", reason=KERAS_REASON)
    return pytest.importorskip("keras", reason=KERAS_REASON)


def test_monitor_is_a_keras_callback_built_once(keras):
    cls = monitor.GenerationMonitor
    from feedback.monitor import GenerationMonitor

    assert GenerationMonitor is cls
    assert issubclass(cls, keras.callbacks.Callback)
    assert cls.__module__ == "feedback.monitor" and cls.__name__ == "GenerationMonitor"
    made = monitor.make_generation_monitor(["a"], max_length=20, every=2)
    assert isinstance(made, cls) and made.max_length == 20 and made.every == 2


def test_epoch_end_prints_verbatim_header_and_records(keras, capsys):
    fake = FakeModel()
    callback = monitor.GenerationMonitor(["q1", "q2"], max_length=33)
    callback.set_model(fake)
    callback.on_epoch_end(0)
    callback.on_epoch_end(1)
    out = capsys.readouterr().out
    assert "--- Generations after epoch 1 ---\nq1 → ответ 1\n\nq2 → ответ 2\n" in out
    assert "--- Generations after epoch 2 ---" in out
    assert callback.generations == {
        1: ["q1 → ответ 1", "q2 → ответ 2"],
        2: ["q1 → ответ 3", "q2 → ответ 4"],
    }
    assert fake.calls[0] == ("q1", 33)


def test_every_skips_epochs(keras, capsys):
    callback = monitor.GenerationMonitor("single prompt", every=2)
    callback.set_model(FakeModel())
    callback.on_epoch_end(0)
    assert capsys.readouterr().out == ""
    callback.on_epoch_end(1)
    assert "--- Generations after epoch 2 ---" in capsys.readouterr().out
    assert list(callback.generations) == [2]


def test_failed_generation_does_not_stop_training(keras, capsys):
    callback = monitor.GenerationMonitor(["boom", "ok"])
    callback.set_model(FakeModel())
    callback.on_epoch_end(0)
    first, second = callback.generations[1]
    assert "генерация не удалась: ValueError: сломалось" in first
    assert second == "ok → ответ 2"


def test_monitor_without_model_says_so(keras, capsys):
    callback = monitor.GenerationMonitor(["q"])
    assert callback.show_generations(1) == []
    assert "callbacks=[monitor]" in capsys.readouterr().out


@pytest.mark.parametrize("prompts", [None, ..., [], [1, 2], 42])
def test_bad_prompts_are_explained(keras, prompts):
    with pytest.raises(TypeError, match="GenerationMonitor ждёт"):
        monitor.GenerationMonitor(prompts)


# --------------------------------------------------------------------------- графики


HISTORY_75 = {"loss": [2.0, 1.2, 0.9, 0.7], "sparse_categorical_accuracy": [0.3, 0.5, 0.6, 0.7]}
HISTORY_76 = {"loss": [1.8, 0.9, 0.6, 0.5], "sparse_categorical_accuracy": [0.4, 0.6, 0.7, 0.8]}


class FakeHistory:
    def __init__(self, history):
        self.history = history


def test_plot_loss_with_accuracy():
    figure = monitor.plot_loss(FakeHistory(HISTORY_75), title="Лабораторная 7.5", tiny=False)
    loss_axes, accuracy_axes = figure.axes
    assert list(loss_axes.get_lines()[0].get_xdata()) == [1, 2, 3, 4]
    assert list(loss_axes.get_lines()[0].get_ydata()) == HISTORY_75["loss"]
    assert loss_axes.get_xlabel() == "Эпоха" and "Потери" in loss_axes.get_ylabel()
    assert "sparse_categorical_accuracy" in accuracy_axes.get_title()
    assert figure._suptitle.get_text() == "Лабораторная 7.5"


def test_plot_loss_without_accuracy_and_with_validation():
    figure = monitor.plot_loss({"loss": [1.0, 0.5], "val_loss": [1.1, 0.8]})
    (axes,) = figure.axes
    assert len(axes.get_lines()) == 2
    assert [t.get_text() for t in axes.get_legend().get_texts()] == ["обучение", "проверка"]


@pytest.mark.parametrize("history", [None, ..., "history", {"accuracy": [0.5]}, {}])
def test_plot_loss_explains_what_is_missing(history, capsys):
    assert monitor.plot_loss(history) is None
    assert "График" in capsys.readouterr().out


def test_plot_loss_comparison():
    figure = monitor.plot_loss_comparison(
        {"7.5: батч 1": HISTORY_75, "7.6: накопление ×8": FakeHistory(HISTORY_76)}
    )
    loss_axes, accuracy_axes = figure.axes
    labels = [t.get_text() for t in loss_axes.get_legend().get_texts()]
    assert labels == ["7.5: батч 1", "7.6: накопление ×8"]
    assert [list(line.get_ydata()) for line in loss_axes.get_lines()] == [
        HISTORY_75["loss"],
        HISTORY_76["loss"],
    ]
    assert len(accuracy_axes.get_lines()) == 2


def test_plot_loss_comparison_skips_unusable_entries(capsys):
    figure = monitor.plot_loss_comparison({"7.5": HISTORY_75, "7.6": None})
    assert len(figure.axes[0].get_lines()) == 1
    assert "«7.6»" in capsys.readouterr().out
    assert monitor.plot_loss_comparison({"7.6": None}) is None
    assert monitor.plot_loss_comparison([HISTORY_75]) is None


# --------------------------------------------------------------------------- тяжёлый тест


@pytest.fixture(scope="module")
def tiny_model():
    pytest.importorskip("sentencepiece", reason=HEAVY_REASON)
    keras_hub = pytest.importorskip("keras_hub", reason=HEAVY_REASON)
    import keras

    from feedback.gpu.tiny_gemma import tiny_preset_path

    preset = tiny_preset_path()
    keras.utils.set_random_seed(812)  # до from_preset, иначе fit падает
    model = keras_hub.models.Gemma3CausalLM.from_preset(preset, dtype="bfloat16")
    model.backbone.enable_lora(rank=4)
    model.preprocessor.sequence_length = 64
    return model


def test_monitor_during_fit(tiny_model, capsys):
    import keras

    from feedback.qa_data import build_training_data, load_local_qa

    prompts = monitor.lab_prompts()[:2]
    callback = monitor.GenerationMonitor(prompts, max_length=24)
    tiny_model.compile(optimizer=keras.optimizers.AdamW(learning_rate=5e-5))
    data = build_training_data(load_local_qa()[:4])
    history = tiny_model.fit(data, epochs=1, batch_size=1, verbose=0, callbacks=[callback])

    out = capsys.readouterr().out
    assert "--- Generations after epoch 1 ---" in out
    assert list(callback.generations) == [1]
    outputs = callback.generations[1]
    assert len(outputs) == 2
    for prompt, output in zip(prompts, outputs, strict=True):
        assert output.startswith(prompt), output
        assert output in out
    figure = monitor.plot_loss(history)
    assert len(figure.axes) == 2  # потери и точность


def test_tiny_mode_is_labelled_and_a_flat_curve_is_not_zoomed():
    """Issue 40: потери крошечной модели 1,5330 → 1,5317 на оси 1,5317–1,5328 казались ошибкой."""
    flat = {"loss": [1.5330, 1.5328, 1.5321, 1.5317]}
    figure = monitor.plot_loss(flat, title="Лабораторная 7.6", tiny=True)
    (axes,) = figure.axes
    assert "учебный режим" in figure._suptitle.get_text()
    bottom, top = axes.get_ylim()
    assert bottom == 0 and top > 1.533
    steep = monitor.plot_loss({"loss": [2.0, 1.0, 0.5]}, tiny=False)
    assert "учебный режим" not in steep._suptitle.get_text()
    assert steep.axes[0].get_ylim()[0] > 0  # настоящая кривая масштабируется как обычно
