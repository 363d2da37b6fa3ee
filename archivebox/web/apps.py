from django.apps import AppConfig
from django.conf import settings


class WebConfig(AppConfig):
    name = "archivebox.web"
    label = "web"
    verbose_name = "Web"

    def ready(self) -> None:
        """Register the admin's modules (Django's autodiscovery, see INSTALLED_APPS) and record
        the signals of both of our Huey queues in the task monitor (see :mod:`monitor`); neither
        in a process that only reads (it serves no page, and its queues run no task)."""
        from django.contrib import admin  # noqa: PLC0415

        from archivebox import boot  # noqa: PLC0415

        if not boot.wiring():
            return
        admin.autodiscover()
        if not settings.TASK_MONITOR:
            return
        from archivebox.sideeffects.queue import huey as sideeffects_huey  # noqa: PLC0415 (apps load before models import)
        from archivebox.tasks.queue import huey as ticks_huey  # noqa: PLC0415
        from archivebox.web import monitor  # noqa: PLC0415

        monitor.install([("ticks", ticks_huey), ("sideeffects", sideeffects_huey)])
