"""Курс на сервере: JupyterHub (учебные учётные записи, exchange, сдача и срок) и formgrader."""
