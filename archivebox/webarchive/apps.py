from django.apps import AppConfig


class WebArchiveConfig(AppConfig):
    name = "archivebox.webarchive"
    label = "webarchive"
    verbose_name = "Web archive"
    default_auto_field = "django.db.models.BigAutoField"
