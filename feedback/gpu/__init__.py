"""GPU-среда лабораторных 7.1, 7.3, 7.5 и 7.6: где выполняется тетрадка и что она получит.

- :mod:`~feedback.gpu.host` — Google Colab, Kaggle или свой компьютер;
- :mod:`~feedback.gpu.tiny_mode` — учебный режим с крошечной моделью (``COURSE7_TINY``);
- :mod:`~feedback.gpu.tiny_gemma` — сама крошечная офлайн-модель Gemma 3 (CI, компьютер без
  видеокарты, песочница оценивания);
- :mod:`~feedback.gpu.kaggle_access` — ключи Kaggle и проверка доступа к весам до загрузки;
- :mod:`~feedback.gpu.xla_memory` — сколько памяти видеокарты на самом деле получит JAX;
- :mod:`~feedback.gpu.notice` — заметные предупреждения в тетрадке;
- :mod:`~feedback.gpu.check` — ``make gpu-check`` (``python -m feedback.gpu.check``): опыты
  лабораторных с памятью на настоящей архитектуре Gemma 3 в памяти T4; рядом его части —
  :mod:`~feedback.gpu.check_experiments` (опыты и их исполнитель),
  :mod:`~feedback.gpu.check_runner` (процессы, слоты, сроки), :mod:`~feedback.gpu.check_card`
  (карта через драйвер CUDA, держатель памяти) и :mod:`~feedback.gpu.check_report` (таблица,
  график, запись).

Кто пользуется: тетрадки импортируют не эти модули, а :mod:`feedback.runtime` (какая
видеокарта и какую модель грузить) и :mod:`feedback.qa_data`, которые собраны из них;
:mod:`feedback.wall` и :mod:`feedback.answers.precision` берут отсюда бюджет памяти T4, а
:mod:`feedback.teacher.unit.caches` — крошечную модель для ядер оценивания.

Тяжёлые библиотеки (jax, keras, tensorflow) модули импортируют сами и только когда нужны:
``import feedback.gpu.<модуль>`` их не тянет.
"""
