#!/usr/bin/env python3
"""Emit every http(s) URL linked (``<a href>``, ``<area href>``) from the page.

Reads the HTML saved by wget (its unconverted copy) or Chromium's DOM, else
fetches the page. Links are resolved against the page URL and ``<base href>``,
fragments are stripped, mailto:/javascript:/data: and other schemes are
skipped, duplicates and the page's own URL are dropped. Writes ``urls.jsonl``
(one ``{"type": "Snapshot", "url": ...}`` per line) and emits the same records.
"""

from archivebox import pluginkit

PLUGIN = "parse_html_urls"


def extract_urls(html, page_url):
    """Unique absolute http(s) outlinks of ``html`` in document order."""
    info = pluginkit.scan_html(html)
    base = page_url
    if info["base"]:
        resolved = pluginkit.normalize_outlink(info["base"], page_url)
        if resolved:
            base = resolved
    own = pluginkit.normalize_outlink(page_url, page_url)
    seen = set()
    urls = []
    for href in info["links"]:
        url = pluginkit.normalize_outlink(href, base)
        if url and url not in seen and url != own:
            seen.add(url)
            urls.append(url)
    return urls


def main():
    args = pluginkit.start(PLUGIN)
    url = args["url"]
    timeout = pluginkit.timeout_for(PLUGIN, 30)
    pluginkit.arm_timeout(timeout + 1, PLUGIN)  # backstop; fetches have their own deadline
    user_agent, check_ssl = pluginkit.net_options(PLUGIN)
    try:
        html, page_url, origin = pluginkit.load_html(url, timeout=timeout, allow_fetch=pluginkit.is_http_url(url),
                                             user_agent=user_agent, check_ssl=check_ssl)
    except pluginkit.RateLimited as err:
        pluginkit.rate_limited(err.status, err.retry_after)
    except pluginkit.FetchError as err:
        pluginkit.transient(str(err))
    if html is None:
        if origin.startswith("not HTML") or origin.startswith("no saved HTML"):
            pluginkit.finish("skipped", origin)
        pluginkit.finish("failed", origin)
    urls = extract_urls(html, page_url or url)
    import json
    pluginkit.write_atomic("urls.jsonl", "".join(
        json.dumps({"type": "Snapshot", "url": u}, ensure_ascii=False) + "\n" for u in urls))
    for u in urls:
        pluginkit.emit_url(u)
    pluginkit.finish("succeeded", "urls.jsonl", {"count": len(urls), "source": origin})


if __name__ == "__main__":
    main()
