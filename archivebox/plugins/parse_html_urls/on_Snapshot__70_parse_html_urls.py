#!/usr/bin/env python3
"""Emit every http(s) URL linked (``<a href>``, ``<area href>``) from the page.

Reads the HTML saved by wget (its unconverted copy) or Chromium's DOM, else
fetches the page. Links are resolved against the page URL and ``<base href>``,
fragments are stripped, mailto:/javascript:/data: and other schemes are
skipped, duplicates and the page's own URL are dropped. Writes ``urls.jsonl``
(one ``{"type": "Snapshot", "url": ...}`` per line) and emits the same records.
"""

from archivebox import pluginkit as H

PLUGIN = "parse_html_urls"


def extract_urls(html, page_url):
    """Unique absolute http(s) outlinks of ``html`` in document order."""
    info = H.scan_html(html)
    base = page_url
    if info["base"]:
        resolved = H.normalize_outlink(info["base"], page_url)
        if resolved:
            base = resolved
    own = H.normalize_outlink(page_url, page_url)
    seen = set()
    urls = []
    for href in info["links"]:
        url = H.normalize_outlink(href, base)
        if url and url not in seen and url != own:
            seen.add(url)
            urls.append(url)
    return urls


def main():
    args = H.start(PLUGIN)
    url = args["url"]
    timeout = H.timeout_for(PLUGIN, 30)
    H.arm_timeout(timeout + 1, PLUGIN)  # backstop; fetches have their own deadline
    user_agent, check_ssl = H.net_options(PLUGIN)
    try:
        html, page_url, origin = H.load_html(url, timeout=timeout, allow_fetch=H.is_http_url(url),
                                             user_agent=user_agent, check_ssl=check_ssl)
    except H.RateLimited as err:
        H.rate_limited(err.status, err.retry_after)
    except H.FetchError as err:
        H.transient(str(err))
    if html is None:
        if origin.startswith("not HTML") or origin.startswith("no saved HTML"):
            H.finish("skipped", origin)
        H.finish("failed", origin)
    urls = extract_urls(html, page_url or url)
    import json
    H.write_atomic("urls.jsonl", "".join(
        json.dumps({"type": "Snapshot", "url": u}, ensure_ascii=False) + "\n" for u in urls))
    for u in urls:
        H.emit_url(u)
    H.finish("succeeded", "urls.jsonl", {"count": len(urls), "source": origin})


if __name__ == "__main__":
    main()
