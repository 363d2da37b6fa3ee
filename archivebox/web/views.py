"""Pages of the web UI: snapshot list, snapshot page, archived files, health check.

Everything but ``/health/`` needs a logged-in staff user unless the collection is shared
(``PUBLIC_INDEX``, ``PUBLIC_SNAPSHOTS``: see :mod:`access`); archived files are reached
through signed links handed to those who may see the snapshot (see :mod:`links`). They are served with
``Content-Security-Policy: sandbox allow-scripts`` (no ``allow-same-origin``): an
archived page's scripts run in an opaque origin, so they cannot read the admin's cookies
or storage, send credentialed requests to it, submit forms, open windows or navigate
the top page.
"""

from __future__ import annotations

import logging
import mimetypes
import uuid

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.paginator import Paginator
from django.db import DatabaseError
from django.db.models import Count, Q
from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET

from archivebox.core import hostleases
from archivebox.core.graphs import ArchiveResultGraph
from archivebox.core.models import ArchiveResult, Snapshot
from archivebox.web import access, captures, files, links, rebase
from archivebox.web.health import liveness
from archivebox.webarchive import lookup
from archivebox.webarchive.replay import REPLAY

logger = logging.getLogger(__name__)

# Archived files run in a sandbox (an opaque origin: no cookies, no storage of ours, no
# forms, no popups, no navigating the top window) and may load only from this server: a
# saved page cannot send a beacon, a fetch, an image request or a websocket to anywhere
# else (it could otherwise leak the signed link it was opened with).
ARCHIVE_CSP = ("sandbox allow-scripts; default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; "
               "form-action 'none'; base-uri 'self'; frame-ancestors 'self'")
# The page that frames an archived document opened on its own (below).
FRAME_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
# Types a browser runs scripts in when opened as the top window.
ACTIVE_TYPES = ("text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml")
# A PDF is shown by the browser's own viewer, which a sandbox blocks. Served as
# application/pdf with nosniff it is never parsed as a page of ours; it may load nothing
# and be framed only by our own pages.
PDF_CSP = "default-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'self'"
PAGE_SIZE = 50
SNIFF_BYTES = 4096
PREVIEW_NAMES = ("index.html", "output.html", "singlefile.html")

@require_GET
@never_cache
def health(request):
    """Orchestrator lease and worker heartbeats as JSON; 200 when the orchestrator and both pools are alive."""
    try:
        report = liveness(timezone.now())
    except DatabaseError as err:
        logger.warning("health check cannot read the database: %s", err)
        return JsonResponse({"healthy": False, "error": "database unavailable"}, status=503)
    return JsonResponse(report, status=200 if report["healthy"] else 503)


@access.index_page
def snapshot_list(request):
    snapshots = Snapshot.objects.select_related("crawl").prefetch_related("tags").annotate(
        results_total=Count("results"), results_failed=Count("results", filter=Q(results__status=ArchiveResultGraph.failed)))
    query = request.GET.get("q", "").strip()
    status = request.GET.get("status", "").strip()
    if query:
        snapshots = snapshots.filter(Q(url__icontains=query) | Q(title__icontains=query))
    if status:
        snapshots = snapshots.filter(status=status)
    page = Paginator(snapshots.order_by("-created_at"), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "web/snapshot_list.html", {
        "page": page, "query": query, "status": status,
        # A signed link opens all of a snapshot's files: only for those who may see them.
        "rows": with_thumbnails(page.object_list) if access.can_see_snapshots(request.user) else
                [(snapshot, None) for snapshot in page.object_list],
        "statuses": [name for name, _ in Snapshot.graph.choices()],
    })


def with_thumbnails(snapshots) -> list[tuple[Snapshot, str | None]]:
    """Each snapshot with the signed URL of its screenshot (or None), from one query of results."""
    snapshots = list(snapshots)
    results: dict = {}
    rows = ArchiveResult.objects.filter(snapshot__in=snapshots, status=ArchiveResultGraph.succeeded).values(
        "snapshot_id", "plugin", "status", "output_str")
    for row in rows:
        if row["output_str"] and captures.kind_of(row["output_str"]) == "image":
            results.setdefault(row["snapshot_id"], []).append(row)
    paired = []
    for snapshot in snapshots:
        shot = captures.thumbnail(captures.of_snapshot(settings.ARCHIVE_DIR, snapshot.pk, results.get(snapshot.pk, [])))
        paired.append((snapshot, signed_url(snapshot.pk, shot.path) if shot else None))
    return paired


def _preview(entries: list[files.Entry]) -> str | None:
    by_path = {entry.path: entry for entry in entries if not entry.is_link}
    for name in PREVIEW_NAMES:
        for path in sorted(by_path, key=lambda p: (p.count("/"), p)):
            if path.rsplit("/", 1)[-1] == name and path != "index.html":
                return path
    return next((p for p in sorted(by_path) if p.endswith((".html", ".htm")) and p != "index.html"), None)


@access.snapshot_page
def snapshot_detail(request, snapshot_id: uuid.UUID):
    snapshot = get_object_or_404(Snapshot.objects.select_related("crawl").prefetch_related("tags"), pk=snapshot_id)
    entries, truncated = files.list_outputs(snapshot.output_dir)
    results = list(snapshot.results.order_by("step", "hook_name"))
    found = captures.of_snapshot(settings.ARCHIVE_DIR, snapshot.pk, results)
    main = captures.main_capture(found)
    archive = lookup.snapshot_archive(snapshot)
    # The web archive's replay is the first capture card, when this machine can replay it.
    target = lookup.replay_target(snapshot) if archive["files"] and REPLAY.available() else None
    return render(request, "web/snapshot_detail.html", {
        "archive": archive if archive["files"] else None,
        "replay": {"src": links.replay_src(snapshot.pk, target), "target": target, **archive} if target else None,
        "snapshot": snapshot,
        "waiting": hostleases.why_waiting(snapshot, timezone.now()),
        "staff": access.is_staff(request.user),
        "token": links.token_for(snapshot.pk),
        "results": results,
        "entries": entries,
        "truncated": truncated,
        "total_size": sum(entry.size for entry in entries),
        "captures": found,
        "main": main,
        "replay_count": 1 if target else 0,
        "preview": None if main else _preview(entries),
    })


def content_type_of(path) -> str:
    """The type to serve a file as: by its name; unknown names are text if they look like text."""
    content_type, encoding = mimetypes.guess_type(path.name)
    if encoding:
        return "application/octet-stream"  # e.g. page.html.gz: a download, not a page
    if content_type:
        return content_type
    with open(path, "rb") as stream:
        head = stream.read(SNIFF_BYTES)
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "application/octet-stream" if b"\x00" in head else "text/plain; charset=utf-8"


@access.snapshot_page
def archived_file(request, snapshot_id: uuid.UUID, path: str = ""):
    """An archived file by its plain URL: for those who may see it, a redirect to its signed URL."""
    if not path or path.endswith("/"):
        return redirect(reverse("web:snapshot", args=[snapshot_id]))
    try:
        files.archived_file(settings.ARCHIVE_DIR, str(snapshot_id), path)
    except files.Refused as err:
        logger.info("refused archive path %r of snapshot %s: %s", path, snapshot_id, err)
        raise Http404("no such file") from None
    return redirect(signed_url(snapshot_id, path))


def signed_url(snapshot_id, path: str) -> str:
    return reverse("web:archive-signed", args=[snapshot_id, links.token_for(snapshot_id), path])


@xframe_options_sameorigin
def archived_file_signed(request, snapshot_id: uuid.UUID, token: str, path: str = ""):
    """One file of a snapshot's output folder, by a signed link (see :mod:`links`), as a sandboxed document."""
    if not links.token_is_valid(snapshot_id, token):
        if access.can_see_snapshots(request.user):
            return redirect(signed_url(snapshot_id, path))
        return redirect_to_login(reverse("web:archive", args=[snapshot_id, path]), login_url=reverse("admin:login"))
    if not Snapshot.objects.filter(pk=snapshot_id).exists():
        raise Http404("no such snapshot")
    try:
        target = files.archived_file(settings.ARCHIVE_DIR, str(snapshot_id), path)
        stream = files.open_regular(target)
    except files.Refused as err:
        logger.info("refused archive path %r of snapshot %s: %s", path, snapshot_id, err)
        raise Http404("no such file") from None
    content_type = content_type_of(target)
    if request.headers.get("Sec-Fetch-Dest") == "document" and content_type.split(";")[0] in ACTIVE_TYPES:
        # Opened as the top window, a saved page could send that window elsewhere (a sandbox
        # does not stop a document navigating itself): it is shown framed in a sandbox instead.
        stream.close()
        response = render(request, "web/archived_frame.html", {"src": request.get_full_path(), "name": target.name})
        response["Content-Security-Policy"] = FRAME_CSP
        response["Referrer-Policy"] = "no-referrer"
        return response
    response = FileResponse(stream, content_type=content_type)
    if content_type.split(";")[0] in ("text/html", "application/xhtml+xml"):
        snapshot = Snapshot.objects.get(pk=snapshot_id)
        replaced = rebase.rebased(target, snapshot_id, token, lookup.replay_target(snapshot))
        if replaced is not None:  # a saved page's relative URLs: into the web archive
            stream.close()
            response = HttpResponse(replaced, content_type=content_type)
    response["Content-Security-Policy"] = PDF_CSP if content_type == "application/pdf" else ARCHIVE_CSP
    response["X-Content-Type-Options"] = "nosniff"
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "private, max-age=3600"
    return response
