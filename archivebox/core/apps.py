from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "archivebox.core"
    label = "core"
    verbose_name = "Archive"
    default_auto_field = "django.db.models.BigAutoField"
