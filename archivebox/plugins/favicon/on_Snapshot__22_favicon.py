#!/usr/bin/env python3
"""Save the site's favicon as ``favicon.<ext>``.

Candidates, in order: the icons the page declares (``<link rel="icon">``,
``"shortcut icon"``, then ``"apple-touch-icon"``; the page's HTML is read from
wget's output when present, else fetched), then ``/favicon.ico`` of the page's
origin. The first candidate that answers 200 with image content wins.
A site without an icon is no failure: the result is ``noresults``, saying what was
tried (most pages declare none and many sites answer 404 for ``/favicon.ico``);
network errors on every candidate exit non-zero (retried later).
"""
import os

from archivebox import pluginkit

PLUGIN = "favicon"

# (magic prefix, extension)
SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"\xff\xd8\xff", "jpg"),
    (b"\x00\x00\x01\x00", "ico"),
    (b"\x00\x00\x02\x00", "cur"),
    (b"BM", "bmp"),
)
TYPE_EXT = {
    "image/png": "png", "image/gif": "gif", "image/jpeg": "jpg", "image/jpg": "jpg",
    "image/x-icon": "ico", "image/vnd.microsoft.icon": "ico", "image/ico": "ico",
    "image/svg+xml": "svg", "image/webp": "webp", "image/bmp": "bmp", "image/avif": "avif",
}


def image_ext(body, content_type, url):
    """Extension for an icon body, or None if it does not look like an image."""
    if not body:
        return None
    for magic, ext in SIGNATURES:
        if body.startswith(magic):
            return ext
    if body[:4] == b"RIFF" and body[8:12] == b"WEBP":
        return "webp"
    head = body[:512].lstrip().lower()
    if head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in body[:2048].lower()):
        return "svg"
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype.startswith("image/") and not head.startswith((b"<!doctype", b"<html")):
        return TYPE_EXT.get(ctype) or ctype[6:].split("+")[0] or "img"
    return None


def icon_candidates(html, page_url):
    """Declared icon URLs (absolute or data:), best first."""
    info = pluginkit.scan_html(html)
    base = page_url
    if info["base"]:
        from urllib.parse import urljoin
        base = urljoin(page_url, info["base"])
    ranked = []
    for order, (rel, href, _sizes, _type) in enumerate(info["icons"]):
        rank = 1 if "apple-touch-icon" in rel else 0
        href = href.strip()
        if href.lower().startswith("data:"):
            ranked.append((rank, order, href))
            continue
        absolute = pluginkit.normalize_outlink(href, base)
        if absolute:
            ranked.append((rank, order, absolute))
    ranked.sort()
    result = []
    for _rank, _order, url in ranked:
        if url not in result:
            result.append(url)
    return result


def decode_data_url(url):
    """``(bytes, content_type)`` of a ``data:`` URL, or ``(None, None)`` if invalid."""
    import base64
    from urllib.parse import unquote_to_bytes
    header, sep, payload = url[5:].partition(",")
    if not sep:
        return None, None
    meta = header.split(";")
    ctype = meta[0] or "text/plain"
    try:
        if "base64" in [m.strip().lower() for m in meta[1:]]:
            return base64.b64decode(payload, validate=False), ctype
        return unquote_to_bytes(payload), ctype
    except ValueError:
        return None, None


def save_icon(body, ext):
    for name in os.listdir("."):
        if name.startswith("favicon.") and os.path.isfile(name):
            os.remove(name)
    filename = f"favicon.{ext}"
    pluginkit.write_atomic(filename, body)
    return filename


def main():
    args = pluginkit.start(PLUGIN)
    url = args["url"]
    if not pluginkit.is_http_url(url):
        pluginkit.finish("skipped", "not an http(s) URL")
    timeout = pluginkit.timeout_for(PLUGIN, 30)
    user_agent, check_ssl = pluginkit.net_options(PLUGIN)
    max_bytes = pluginkit.env_int("FAVICON_MAX_BYTES", 2 * 1024 * 1024, fallbacks=(), minimum=1024)
    import time
    deadline = time.monotonic() + timeout

    def left():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            pluginkit.transient(f"timed out after {timeout}s")
        return remaining

    candidates = []
    page_url = url
    try:
        html, page_url, origin = pluginkit.load_html(url, timeout=left(), user_agent=user_agent, check_ssl=check_ssl)
    except pluginkit.RateLimited as err:
        pluginkit.rate_limited(err.status, err.retry_after)
    except pluginkit.FetchError as err:
        pluginkit.transient(str(err))
    if html is not None:
        candidates = icon_candidates(html, page_url or url)
        pluginkit.log(f"page read from {origin}: {len(candidates)} declared icon(s)")
    else:
        pluginkit.log(f"page not usable ({origin}); trying /favicon.ico only")
        page_url = url
    from urllib.parse import urlsplit
    parts = urlsplit(page_url or url)
    fallback = f"{parts.scheme}://{parts.netloc}/favicon.ico"
    if fallback not in candidates:
        candidates.append(fallback)

    network_errors, misses = [], []
    for candidate in candidates:
        if candidate.startswith("data:"):
            body, ctype = decode_data_url(candidate)
            ext = image_ext(body, ctype, candidate) if body else None
            if ext and len(body) <= max_bytes:
                name = save_icon(body, ext)
                pluginkit.finish("succeeded", name, {"url": "data:", "bytes": len(body), "content_type": ctype})
            misses.append("data: URL (not an image)")
            continue
        try:
            resp = pluginkit.fetch(candidate, timeout=left(), max_bytes=max_bytes + 1, user_agent=user_agent,
                           check_ssl=check_ssl, accept="image/*,*/*;q=0.8")
        except pluginkit.FetchError as err:
            pluginkit.log(f"WARNING: {err}")
            network_errors.append(str(err))
            continue
        if resp.rate_limit():
            pluginkit.rate_limited(resp.status, resp.header("retry-after"))
        if resp.status != 200:
            misses.append(f"{candidate}: {resp.status_text}")
            continue
        if len(resp.body) > max_bytes:
            misses.append(f"{candidate}: larger than {max_bytes} bytes")
            continue
        ext = image_ext(resp.body, resp.content_type, candidate)
        if not ext:
            misses.append(f"{candidate}: not an image ({resp.content_type or 'no content type'})")
            continue
        name = save_icon(resp.body, ext)
        pluginkit.finish("succeeded", name, {
            "url": resp.url, "bytes": len(resp.body), "content_type": resp.content_type,
        })

    for miss in misses:
        pluginkit.log(f"no icon: {miss}")
    if network_errors and not misses:
        pluginkit.transient(f"could not fetch any icon: {network_errors[-1]}")
    if html is None and origin.startswith("not HTML"):
        declared = f"the document is {origin}"
    elif html is None:
        declared = f"the page was not readable ({origin})"
    elif len(candidates) == 1:
        declared = "the page declares none"
    else:
        declared = f"none of the {len(candidates) - 1} it declares is an image"
    pluginkit.finish("noresults", f"no icon: {declared}, and {misses[-1]}", {"tried": candidates, "misses": misses})


if __name__ == "__main__":
    main()
