"""API tokens: rows with an expiry, handed only to staff users, revocable in the admin."""

from __future__ import annotations

import datetime as dt
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_LIFETIME = dt.timedelta(days=365)


def new_token() -> str:
    return secrets.token_hex(16)


class APIToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    token = models.CharField(max_length=64, unique=True, default=new_token)
    created_at = models.DateTimeField(default=timezone.now)
    expires = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"API token of {self.user} ({self.token[:6]}…)"

    def is_valid(self, now: dt.datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires is None or self.expires > now)


def token_for(user, now: dt.datetime | None = None) -> APIToken:
    """The user's newest valid token, or a new one (staff users only: the caller checks)."""
    now = now or timezone.now()
    for token in APIToken.objects.filter(user=user, revoked_at__isnull=True).order_by("-created_at"):
        if token.is_valid(now):
            return token
    return APIToken.objects.create(user=user, created_at=now, expires=now + TOKEN_LIFETIME)


def user_of(token: str | None, now: dt.datetime | None = None):
    """The active staff user a valid token belongs to, or None."""
    if not token:
        return None
    found = APIToken.objects.select_related("user").filter(token=token).first()
    if found is None or not found.is_valid(now) or not (found.user.is_active and found.user.is_staff):
        return None
    return found.user
