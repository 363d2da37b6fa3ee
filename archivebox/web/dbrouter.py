"""Routes django-huey-monitor's models to their own database when one is configured.

With a SQLite app DB, settings add a ``monitor`` database (``<DATA_DIR>/monitor.sqlite3``):
every monitor write then takes that file's write lock, never the app's. With Postgres
there is no ``monitor`` alias and everything stays in ``default``.
"""

from __future__ import annotations

from django.conf import settings

MONITOR_APP = "huey_monitor"
MONITOR_DB = "monitor"


def monitor_db() -> str:
    """The database alias holding the monitor's tables."""
    return MONITOR_DB if MONITOR_DB in settings.DATABASES else "default"


class MonitorRouter:
    def db_for_read(self, model, **hints):
        return monitor_db() if model._meta.app_label == MONITOR_APP else None

    def db_for_write(self, model, **hints):
        return monitor_db() if model._meta.app_label == MONITOR_APP else None

    def allow_relation(self, obj1, obj2, **hints):
        monitor = {obj1._meta.app_label == MONITOR_APP, obj2._meta.app_label == MONITOR_APP}
        return True if monitor == {True} else None if monitor == {False} else False

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        if monitor_db() == "default":
            return None
        if app_label == MONITOR_APP:
            return db == MONITOR_DB
        return False if db == MONITOR_DB else None
