from django.apps import AppConfig


class BinariesConfig(AppConfig):
    name = "archivebox.binaries"
    label = "binaries"
    verbose_name = "Binaries"
    default_auto_field = "django.db.models.BigAutoField"
