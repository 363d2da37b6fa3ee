#!/usr/bin/env python3
"""Emit every http(s) URL found in a plain-text document.

Applies when the snapshot's document is ``text/plain`` (per wget's log or
``headers.json``), or its URL path ends with ``.txt``; otherwise skipped.
The document is read from wget's output, else fetched. Trailing punctuation
is trimmed from matches, fragments are stripped, duplicates dropped. Writes
``urls.jsonl`` and emits one ``Snapshot`` record per URL.
"""

from archivebox import pluginkit

PLUGIN = "parse_txt_urls"
TRAILING = ".,;:!?'\"*>»”’"


def extract_urls(text):
    """Unique http(s) URLs in ``text`` in order of appearance."""
    import re
    pattern = re.compile(r"""https?://[^\s<>"'`{}|\\^\[\]\x00-\x1f\x7f]+""", re.IGNORECASE)
    seen = set()
    urls = []
    for match in pattern.finditer(text):
        candidate = match.group(0)
        while candidate:
            if candidate[-1] in TRAILING:
                candidate = candidate[:-1]
            elif candidate[-1] == ")" and candidate.count("(") < candidate.count(")"):
                candidate = candidate[:-1]
            else:
                break
        url = pluginkit.normalize_outlink(candidate, candidate)
        if url and url not in seen:
            seen.add(url)
            urls.append(url)
    return urls


def is_text_plain(content_type, url):
    mime = (content_type or "").split(";")[0].strip().lower()
    if mime == "text/plain":
        return True
    from urllib.parse import urlsplit
    try:
        path = urlsplit(url).path.lower()
    except ValueError:
        return False
    return path.endswith(".txt") and mime in ("", "text/plain", "application/octet-stream")


def main():
    args = pluginkit.start(PLUGIN)
    url = args["url"]
    timeout = pluginkit.timeout_for(PLUGIN, 30)
    pluginkit.arm_timeout(timeout + 1, PLUGIN)  # backstop; fetches have their own deadline
    user_agent, check_ssl = pluginkit.net_options(PLUGIN)
    allow_fetch = pluginkit.is_http_url(url)
    doc = pluginkit.find_document()
    if doc is not None and doc.source == "wget" and not is_text_plain(doc.content_type, url):
        pluginkit.finish("skipped", f"not a text/plain document ({doc.content_type or 'unknown type'})")
    if doc is None and not is_text_plain(None, url):
        # Nothing saved: only fetch if the headers hook says text/plain or the URL says .txt
        info = pluginkit.read_json(pluginkit.sibling_path("headers", "headers.json"), None)
        ctype = None
        if isinstance(info, dict):
            ctype = next((v for k, v in (info.get("headers") or {}).items() if k.lower() == "content-type"), None)
        if info is not None and not is_text_plain(ctype, url):
            pluginkit.finish("skipped", f"not a text/plain document ({ctype or 'unknown type'})")
    try:
        data, ctype, doc_url, origin = pluginkit.load_document(url, timeout=timeout, allow_fetch=allow_fetch,
                                                       user_agent=user_agent, check_ssl=check_ssl)
    except pluginkit.RateLimited as err:
        pluginkit.rate_limited(err.status, err.retry_after)
    except pluginkit.FetchError as err:
        pluginkit.transient(str(err))
    if data is None:
        if origin.startswith("no saved"):
            pluginkit.finish("skipped", origin)
        pluginkit.finish("failed", origin)
    if not is_text_plain(ctype, doc_url or url):
        pluginkit.finish("skipped", f"not a text/plain document ({ctype or 'unknown type'})")
    text = pluginkit.decode_bytes(data, ctype)
    urls = extract_urls(text)
    import json
    pluginkit.write_atomic("urls.jsonl", "".join(
        json.dumps({"type": "Snapshot", "url": u}, ensure_ascii=False) + "\n" for u in urls))
    for u in urls:
        pluginkit.emit_url(u, expand=True)  # a URL list: its URLs are archived at this depth
    pluginkit.finish("succeeded", "urls.jsonl", {"count": len(urls), "source": origin})


if __name__ == "__main__":
    main()
