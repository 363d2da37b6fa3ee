"""A persona: a name, a user agent, and a cookies file kept outside the database.

The cookies are secrets (a logged-in session): they live only in
``<DATA_DIR>/personas/<name>/cookies.txt``, mode 0600 in a 0700 folder (see
:mod:`archivebox.personas.store`). Rows, crawl configs, Process rows and logs only ever
hold the file's path.
"""

from django.core.validators import RegexValidator
from django.db import models

from archivebox.core.models.base import uuid7

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class Persona(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    name = models.CharField(max_length=64, unique=True, validators=[RegexValidator(
        NAME_PATTERN, "letters, digits, '.', '_' and '-' only, starting with a letter or digit")])
    user_agent = models.CharField(max_length=512, blank=True, default="",
                                  help_text="User-Agent for this persona's crawls; empty: the configured USER_AGENT")
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
