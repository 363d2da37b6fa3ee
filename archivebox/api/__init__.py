"""The REST API at ``/api/v1/``, compatible with ArchiveBox's v1 (built with django-ninja)."""
