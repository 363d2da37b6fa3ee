#!/usr/bin/env python3
"""Extract the page's ``<title>`` and set it as the snapshot's title.

Prefers the title after the page's scripts ran, as the browser saw it (the ``chrome``
plugin's page load: a script-set title is what a reader sees); else reads the HTML saved
by wget (else Chromium's DOM), else fetches the page.
Entities are decoded and whitespace collapsed; ``og:title``/``twitter:title``
are used when the page has no ``<title>``. Emits ``{"type": "Snapshot",
"title": ...}`` and writes ``title.txt``.
"""

from archivebox import pluginkit

PLUGIN = "title"
MAX_TITLE = 1024


def main():
    args = pluginkit.start(PLUGIN)
    url = args["url"]
    rendered = pluginkit.collapse_ws(pluginkit.rendered_title() or "")
    if rendered:
        finish_with(rendered, "chrome", "rendered")
    timeout = pluginkit.timeout_for(PLUGIN, 30)
    pluginkit.arm_timeout(timeout + 1, PLUGIN)  # backstop; fetches have their own deadline
    user_agent, check_ssl = pluginkit.net_options(PLUGIN)
    allow_fetch = pluginkit.is_http_url(url)
    try:
        html, _base, origin = pluginkit.load_html(url, timeout=timeout, allow_fetch=allow_fetch,
                                          user_agent=user_agent, check_ssl=check_ssl)
    except pluginkit.RateLimited as err:
        pluginkit.rate_limited(err.status, err.retry_after)
    except pluginkit.FetchError as err:
        pluginkit.transient(str(err))
    if html is None:
        if not allow_fetch:
            pluginkit.finish("skipped", "no saved HTML and not an http(s) URL")
        pluginkit.finish("failed", origin)
    info = pluginkit.scan_html(html)
    title = pluginkit.collapse_ws(info["title"] or "")
    source = "title"
    if not title:
        for key in ("og:title", "twitter:title"):
            title = pluginkit.collapse_ws(info["meta"].get(key, ""))
            if title:
                source = key
                break
    if not title:
        pluginkit.finish("failed", "page has no title", {"source": origin})
    finish_with(title, origin, source)


def finish_with(title, origin, source):
    if len(title) > MAX_TITLE:
        title = title[:MAX_TITLE - 1].rstrip() + "\u2026"
    pluginkit.write_atomic("title.txt", title + "\n")
    pluginkit.emit({"type": "Snapshot", "title": title})
    pluginkit.finish("succeeded", title, {"title": title, "source": origin, "from": source})


if __name__ == "__main__":
    main()
