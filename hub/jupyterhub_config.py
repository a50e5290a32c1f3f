"""Настройки JupyterHub курса для make hub: всё — в feedback/teacher/hub/config.py (configure).

make hub готовит рабочую папку (.course-work/hub/ или COURSE7_GRADING_DIR/hub/: учётные записи
из students.csv, пароли, настройки серверов, порты — hub.json) и запускает
``jupyterhub -f hub/jupyterhub_config.py``. На своём сервере (The Littlest JupyterHub и др.)
этот файл не нужен: что в нём задано и как то же сделать там — docs/teaching.md, «Курс на
JupyterHub».
"""

from feedback.teacher.core.settings import Settings
from feedback.teacher.hub.config import configure

configure(get_config(), Settings.from_env().workspace)  # noqa: F821
