"""The ``ticks`` queue: the orchestrator's dispatches and the tick tasks run here."""

from django.conf import settings

from archivebox.broker.huey_ext import build_huey

huey = build_huey("ticks", settings.QUEUE_DIR, settings.REDIS_URL)
