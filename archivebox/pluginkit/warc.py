"""Recording a page load as WARC 1.1, from what the browser says over CDP.

:class:`Recorder` is fed the ``Network`` events of one tab (see
:class:`archivebox.pluginkit.browser.Tab`): for each request it keeps what was sent
(``requestWillBeSent``, the headers really sent from ``requestWillBeSentExtraInfo``) and
what came back (``responseReceived``, the raw headers from ``responseReceivedExtraInfo``),
and once the response is complete (``loadingFinished``) asks the browser for its body
(``Network.getResponseBody``) and writes a ``request`` and a ``response`` record with
warcio. A redirect is a response without a body (its hop ends when the next request of
the same id is sent); a response that failed to load is not recorded.

What is as served and what is not: status, headers and bytes are those the browser
received, except that Chromium hands over the body decoded (its ``Content-Encoding``
undone, chunks joined), so those two headers are renamed ``X-Archive-Orig-Content-Encoding``
and ``X-Archive-Orig-Transfer-Encoding`` and ``Content-Length`` is set to the body's
length, as Webrecorder's browser-based recorders do: the record then replays in any
tool. HTTP/2 and HTTP/3 responses are written in HTTP/1.1 form.

The file is written as the records come (each record one gzip member), to
``<name>.warc.gz.open``, renamed to ``<name>.warc.gz`` by :meth:`Recorder.close`: a
recording cut short by a killed hook never passes for a whole one. The engine files a
finished one into the collection's archive after the hook (deduplicated, indexed).
"""

import asyncio
import base64
import datetime
import io
import os
import time
from http.client import responses as REASONS

from .output import log

WARC_DIR = "warc"
# Chromium keeps response bodies for getResponseBody up to these sizes (its defaults are
# smaller: a page's 10 MB resource would be lost).
MAX_TOTAL_BUFFER = 512 * 1024 * 1024
MAX_RESOURCE_BUFFER = 128 * 1024 * 1024
# How long the end of a visit waits at most for the responses still loading (a script's
# late fetch, a large download) and the bodies still being read; a request that received
# nothing for IDLE_AFTER seconds is not waited for (a page may hold one open for ever).
FLUSH_TIMEOUT = 10.0
IDLE_AFTER = 2.0
RENAMED = {"content-encoding": "X-Archive-Orig-Content-Encoding", "transfer-encoding": "X-Archive-Orig-Transfer-Encoding"}
SKIPPED_HEADERS = ("content-length",)


def warc_name(snapshot_id, now=None):
    """``<UTC timestamp to the millisecond>-<snapshot id>``: unique in the collection (a
    snapshot's later recordings have later names), sorted by time."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return f"{now.strftime('%Y%m%d%H%M%S')}{now.microsecond // 1000:03d}-{snapshot_id or 'page'}"


def header_lines(headers):
    """CDP's header dict as (name, value) pairs: a value with newlines is several headers."""
    pairs = []
    for name, value in (headers or {}).items():
        if name.startswith(":"):  # HTTP/2 pseudo-headers
            continue
        for part in str(value).split("\n"):
            pairs.append((name, part))
    return pairs


def iso_date(wall_time):
    stamp = datetime.datetime.fromtimestamp(wall_time or time.time(), datetime.timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Exchange:
    """One request and (once it came) its response, by CDP request id and hop."""

    __slots__ = ("url", "method", "headers", "post_data", "wall_time", "response", "raw_headers", "sent_headers")

    def __init__(self, request, wall_time):
        self.url = request["url"]
        self.method = request.get("method", "GET")
        self.headers = request.get("headers") or {}
        self.post_data = request.get("postData")
        self.wall_time = wall_time
        self.response = None
        self.raw_headers = None  # responseReceivedExtraInfo: the headers as received
        self.sent_headers = None  # requestWillBeSentExtraInfo: the headers as sent (cookies too)


class Recorder:
    """Writes one tab's page load as WARC records in ``folder`` (see the module doc)."""

    def __init__(self, folder, name, info):
        from warcio.warcwriter import WARCWriter

        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, f"{name}.warc.gz")
        self.open_path = self.path + ".open"
        self._file = open(self.open_path, "wb")
        self.writer = WARCWriter(self._file, gzip=True, warc_version="WARC/1.1")
        self.writer.write_record(self.writer.create_warcinfo_record(os.path.basename(self.path), info))
        self.exchanges = {}
        self.extra_sent = {}  # request id -> [headers as sent], in order (one per hop)
        self.extra_received = {}  # request id -> [headers as received], in order
        self.pending = set()
        self.activity = {}  # request id -> when it last made progress (time.monotonic())
        self.send = None  # set by the tab: its send(method, params)
        self.counts = {"responses": 0, "bytes": 0, "no_body": 0}

    # Events ---------------------------------------------------------------------------

    def request_sent(self, event):
        request = event.get("request") or {}
        request_id = event.get("requestId")
        if not request_id:
            return
        redirect = event.get("redirectResponse")
        if redirect is not None and request_id in self.exchanges:
            hop = self.exchanges.pop(request_id)
            hop.response = redirect
            self._attach_extra(request_id, hop)
            self._write(hop, b"")
        if request.get("url", "").startswith(("http://", "https://")):
            self.exchanges[request_id] = Exchange(request, event.get("wallTime"))
            self.activity[request_id] = time.monotonic()

    def request_extra(self, event):
        self.extra_sent.setdefault(event.get("requestId"), []).append(event.get("headers") or {})

    def response_received(self, event):
        self.activity[event.get("requestId")] = time.monotonic()
        exchange = self.exchanges.get(event.get("requestId"))
        if exchange is not None:
            exchange.response = event.get("response")

    def response_extra(self, event):
        self.extra_received.setdefault(event.get("requestId"), []).append(event.get("headers") or {})

    def loading_finished(self, event):
        request_id = event.get("requestId")
        exchange = self.exchanges.pop(request_id, None)
        self.activity.pop(request_id, None)
        if exchange is None or exchange.response is None or self.send is None:
            return
        self._attach_extra(request_id, exchange)
        task = asyncio.ensure_future(self._fetch_and_write(request_id, exchange))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    def loading_failed(self, event):
        request_id = event.get("requestId")
        self.exchanges.pop(request_id, None)
        self.activity.pop(request_id, None)
        self.extra_sent.pop(request_id, None)
        self.extra_received.pop(request_id, None)

    def _attach_extra(self, request_id, exchange):
        sent = self.extra_sent.get(request_id)
        if sent:
            exchange.sent_headers = sent.pop(0)
        received = self.extra_received.get(request_id)
        if received:
            exchange.raw_headers = received.pop(0)

    async def _fetch_and_write(self, request_id, exchange):
        try:
            reply = await self.send("Network.getResponseBody", {"requestId": request_id})
        except Exception as err:  # the browser's refusal (no body kept) or a closed tab: headers only
            log(f"WARC: no body for {exchange.url[:200]}: {str(err).splitlines()[0][:200] if str(err) else type(err).__name__}")
            self.counts["no_body"] += 1
            reply = {"body": "", "base64Encoded": False}
        body = reply.get("body") or ""
        data = base64.b64decode(body) if reply.get("base64Encoded") else body.encode("utf-8")
        self._write(exchange, data)

    # Records --------------------------------------------------------------------------

    def _write(self, exchange, body):
        from warcio.statusandheaders import StatusAndHeaders

        response = exchange.response
        status = int(response.get("status") or 0)
        reason = response.get("statusText") or REASONS.get(status, "")
        received = exchange.raw_headers or response.get("headers") or {}
        lines = []
        for name, value in header_lines(received):
            lowered = name.lower()
            if lowered in SKIPPED_HEADERS:
                continue
            lines.append((RENAMED.get(lowered, name), value))
        lines.append(("Content-Length", str(len(body))))
        http_headers = StatusAndHeaders(f"{status} {reason}".strip(), lines, protocol="HTTP/1.1")
        date = iso_date(exchange.wall_time)
        warc_headers = {"WARC-Date": date}
        if response.get("remoteIPAddress"):
            warc_headers["WARC-IP-Address"] = response["remoteIPAddress"].strip("[]")
        record = self.writer.create_warc_record(exchange.url, "response", payload=io.BytesIO(body), length=len(body),
                                                http_headers=http_headers, warc_headers_dict=warc_headers)
        request = self.writer.create_warc_record(exchange.url, "request", payload=io.BytesIO(self._post_data(exchange)),
                                                 http_headers=self._request_headers(exchange),
                                                 warc_headers_dict={"WARC-Date": date})
        self.writer.write_request_response_pair(request, record)
        self.counts["responses"] += 1
        self.counts["bytes"] += len(body)

    @staticmethod
    def _post_data(exchange):
        data = exchange.post_data
        return data.encode("utf-8") if isinstance(data, str) else b""

    @staticmethod
    def _request_headers(exchange):
        from urllib.parse import urlsplit

        from warcio.statusandheaders import StatusAndHeaders

        parts = urlsplit(exchange.url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = header_lines(exchange.sent_headers or exchange.headers)
        if not any(name.lower() == "host" for name, _ in lines):
            lines.insert(0, ("Host", parts.netloc))
        return StatusAndHeaders(f"{exchange.method} {target} HTTP/1.1", lines, protocol="HTTP/1.1", is_http_request=True)

    # End ------------------------------------------------------------------------------

    def data_received(self, event):
        self.activity[event.get("requestId")] = time.monotonic()

    def loading(self):
        """The requests still loading that made progress within IDLE_AFTER (a request a page
        holds open for ever, waiting for news, does not count)."""
        now = time.monotonic()
        return [request_id for request_id in self.exchanges if now - self.activity.get(request_id, 0) < IDLE_AFTER]

    async def flush(self, timeout=FLUSH_TIMEOUT):
        """Wait (at most ``timeout``) for the responses still loading (while they make
        progress: a large download takes as long as it takes) and the bodies still being
        read; what is still loading then is left out."""
        deadline = time.monotonic() + timeout
        while self.loading() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.exchanges:
            log(f"WARC: {len(self.exchanges)} requests were still loading at the end and are left out: "
                + ", ".join(exchange.url[:100] for exchange in list(self.exchanges.values())[:3]))
        if self.pending:
            done, left = await asyncio.wait(set(self.pending), timeout=max(1.0, deadline - time.monotonic()))
            for task in left:
                task.cancel()
            if left:
                log(f"WARC: {len(left)} responses were still being read at the end and are left out")

    def close(self):
        """Finish the file; its path (None if nothing but the warcinfo record was written)."""
        self._file.close()
        if not self.counts["responses"]:
            os.remove(self.open_path)
            return None
        os.replace(self.open_path, self.path)
        return self.path

    def abandon(self):
        self._file.close()
        if os.path.exists(self.open_path):
            os.remove(self.open_path)
