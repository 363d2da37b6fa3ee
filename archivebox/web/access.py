"""Who may see which page: staff always; anyone else only what the collection shares.

``PUBLIC_INDEX`` opens the snapshot list and its RSS feed, ``PUBLIC_SNAPSHOTS`` the
snapshot pages and their archived files (still served sandboxed, by signed links), as in
ArchiveBox. Both are off by default; everything else (the admin, the add page) needs a
logged-in staff user.
"""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.urls import reverse


def is_staff(user) -> bool:
    return bool(user.is_active and user.is_staff)


def can_see_index(user) -> bool:
    return settings.PUBLIC_INDEX or is_staff(user)


def can_see_snapshots(user) -> bool:
    return settings.PUBLIC_SNAPSHOTS or is_staff(user)


def to_login(request):
    return redirect_to_login(request.get_full_path(), login_url=reverse("admin:login"))


def _gate(allowed):
    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not allowed(request.user):
                return to_login(request)
            return view(request, *args, **kwargs)
        return wrapped
    return decorator


index_page = _gate(can_see_index)
snapshot_page = _gate(can_see_snapshots)
staff_page = _gate(is_staff)


def staff_with(*perms: str):
    """A staff page that also needs Django's model permissions ``perms`` (403 without them),
    as the admin and the REST API ask."""
    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not is_staff(request.user):
                return to_login(request)
            if not request.user.has_perms(perms):
                raise PermissionDenied(f"needs {', '.join(perms)}")
            return view(request, *args, **kwargs)
        return wrapped
    return decorator
