#!/usr/bin/env python3
"""Example background hook (docs/plugins.md): save the raw HTTP response of ``--url``.

``.finite.bg``: it runs beside the later steps instead of holding them up, and the
snapshot waits for it (within EXAMPLE_FETCH_TIMEOUT) before it is sealed. Uses the
plugin kit, importable by any hook: ``from archivebox import pluginkit``.

Writes ``response.body`` and ``response.json`` {url, status, headers, bytes, truncated}.
HTTP 408/425/429/5xx and network errors exit non-zero (retried later); other HTTP
errors are a final ``failed``.
"""
from archivebox import pluginkit

PLUGIN = "example_fetch"


def main():
    args = pluginkit.start(PLUGIN)  # parses argv; exits "skipped" if EXAMPLE_FETCH_ENABLED=false
    url = args["url"]
    if not pluginkit.is_http_url(url):
        pluginkit.finish("skipped", "not an http(s) URL")
    user_agent, check_ssl = pluginkit.net_options(PLUGIN)
    max_bytes = pluginkit.env_int("EXAMPLE_FETCH_MAX_BYTES", 1024 * 1024, fallbacks=())
    try:
        resp = pluginkit.fetch(url, timeout=pluginkit.timeout_for(PLUGIN, 30), max_bytes=max_bytes,
                         user_agent=user_agent, check_ssl=check_ssl)
    except pluginkit.FetchError as err:
        pluginkit.transient(str(err))  # logs "ERROR: ..." to stderr and exits 1
    if pluginkit.is_transient_status(resp.status):
        pluginkit.transient(f"HTTP {resp.status_text} (the server may recover)")
    if resp.status >= 400:
        pluginkit.finish("failed", resp.status_text)
    pluginkit.write_atomic("response.body", resp.body)
    info = {"url": resp.url, "status": resp.status, "headers": resp.headers_dict(),
            "bytes": len(resp.body), "truncated": resp.truncated}
    pluginkit.write_json("response.json", info)
    pluginkit.finish("succeeded", "response.body", {"bytes": len(resp.body), "truncated": resp.truncated})


if __name__ == "__main__":
    main()
