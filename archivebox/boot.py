"""Start Django for any entry point: the CLI, the Huey consumers and the tests.

Every process that touches the database calls :func:`setup` once. It is cheap to
call again, so entry points need not coordinate.
"""

import os

import django

SETTINGS_MODULE = "archivebox.settings"


def setup() -> None:
    """Configure Django from the environment (see :mod:`archivebox.settings`)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS_MODULE)
    django.setup()
