"""Start Django for any entry point: the CLI, the Huey consumers and the tests.

Every process that touches the database calls :func:`setup` once. It is cheap to
call again, so entry points need not coordinate.

Everything the engine writes (databases, logs, secrets, the archive, the queue files) is
created readable by its own user only: :func:`setup` sets the process umask to ``077``,
which hooks and every other subprocess inherit.
"""

import os

import django

SETTINGS_MODULE = "archivebox.settings"
UMASK = 0o077


def setup() -> None:
    """Configure Django from the environment (see :mod:`archivebox.settings`)."""
    os.umask(UMASK)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS_MODULE)
    django.setup()
