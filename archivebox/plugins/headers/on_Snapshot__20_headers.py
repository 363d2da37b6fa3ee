#!/usr/bin/env python3
"""Fetch the snapshot URL (GET, following redirects) and save its response headers.

Writes ``headers.json``: ``{"url": final URL, "requested_url", "status", "reason",
"headers": {...}, "redirects": [{"status", "url"}, ...]}``.
HTTP 429 and 503 say "slow down" (exit 75 with the site's Retry-After: the engine rests the
host, then retries); other 5xx are transient (non-zero exit: retried later, headers.json kept);
other HTTP >= 400 is a permanent failure (exit 0, status failed); network errors and
timeouts exit non-zero so the engine retries later.
"""

from archivebox import pluginkit

PLUGIN = "headers"


def main():
    args = pluginkit.start(PLUGIN)
    url = args["url"]
    if not pluginkit.is_http_url(url):
        pluginkit.finish("skipped", "not an http(s) URL")
    timeout = pluginkit.timeout_for(PLUGIN, 30)
    user_agent, check_ssl = pluginkit.net_options(PLUGIN)
    try:
        resp = pluginkit.fetch(url, timeout=timeout, read_body=False, user_agent=user_agent, check_ssl=check_ssl)
    except pluginkit.FetchError as err:
        pluginkit.transient(str(err))
    headers = resp.headers_dict()
    info = {
        "url": resp.url,
        "requested_url": url,
        "status": resp.status,
        "reason": resp.reason,
        "headers": headers,
        "redirects": [{"status": status, "url": hop} for status, hop in resp.redirects],
    }
    pluginkit.write_json("headers.json", info)
    summary = {
        "status": resp.status,
        "url": resp.url,
        "content_type": resp.content_type,
        "redirects": len(resp.redirects),
    }
    if resp.rate_limit():
        pluginkit.rate_limited(resp.status, resp.header("retry-after"), output_json=summary)
    if pluginkit.is_transient_status(resp.status):
        pluginkit.transient(f"HTTP {resp.status_text}: the server may recover, retry later")
    if resp.status >= 400:
        pluginkit.finish("failed", resp.status_text, summary)
    pluginkit.finish("succeeded", "headers.json", summary)


if __name__ == "__main__":
    main()
