from django.apps import AppConfig


class PersonasConfig(AppConfig):
    name = "archivebox.personas"
    label = "personas"
    verbose_name = "Personas"
    default_auto_field = "django.db.models.BigAutoField"
