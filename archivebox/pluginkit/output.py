"""What a hook says: JSONL records on stdout, log lines on stderr, its exit code.

The engine reads stdout as JSONL: any number of records (``{"type": "Snapshot", "url":
...}`` for discovered links, ...) and last this hook's own ``ArchiveResult``. Exit code 0
means "the result I printed is final" (``succeeded``, ``failed``, ``skipped``,
``noresults``); a non-zero exit means "transient failure, retry later" and the engine
uses the last stderr line as the reason.
"""

import sys


def log(*parts):
    """Human log line on stderr (stdout is reserved for JSONL records)."""
    sys.stderr.write(" ".join(str(p) for p in parts) + "\n")
    sys.stderr.flush()


def emit(record):
    """Write one JSONL record to stdout and flush."""
    import json
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    try:
        data = line.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (undecodable file names): escape them
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode("ascii")
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def emit_url(url, **extra):
    """Emit a discovered outlink as a ``Snapshot`` record."""
    record = {"type": "Snapshot", "url": url}
    record.update(extra)
    emit(record)


def finish(status, output_str="", output_json=None, exit_code=0):
    """Emit this hook's final ``ArchiveResult`` record and exit (0 by default)."""
    record = {"type": "ArchiveResult", "status": status, "output_str": output_str}
    if output_json is not None:
        record["output_json"] = output_json
    emit(record)
    sys.exit(exit_code)


def transient(message, exit_code=1):
    """Transient failure: log ``message`` and exit non-zero so the engine retries later."""
    log(f"ERROR: {message}")
    sys.exit(exit_code)


# The exit code of a hook the site told to slow down (sysexits' EX_TEMPFAIL): see rate_limited.
EXIT_RATE_LIMITED = 75


def rate_limited(status, retry_after=None, output_str=None, output_json=None):
    """The site answered 429 or 503 ("slow down"): report it and exit 75.

    The record carries ``http_status`` and the site's ``Retry-After`` as it was sent
    (seconds or an HTTP date); the engine then rests the site's host for that long (or
    backs off), retries this hook after the rest without counting the attempt, and starts
    nothing else of that host meanwhile."""
    record = {"type": "ArchiveResult", "status": "failed", "http_status": status,
              "output_str": output_str or f"HTTP {status}: the site asks to slow down"}
    if retry_after not in (None, ""):
        record["retry_after"] = str(retry_after).strip()
    if output_json is not None:
        record["output_json"] = output_json
    log(f"ERROR: {record['output_str']}" + (f" (Retry-After: {record['retry_after']})" if "retry_after" in record else ""))
    emit(record)
    sys.exit(EXIT_RATE_LIMITED)


def arm_timeout(seconds, what="hook"):
    """Exit non-zero (transient failure) if this process is still running after ``seconds``.

    A backstop for pure-Python work (parsing, extraction, indexing); network
    calls have their own deadline and subprocesses their own kill timer.
    """
    import signal

    def on_alarm(signum, frame):
        transient(f"{what} timed out after {seconds}s")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max(1, int(seconds)))


def disarm_timeout():
    import signal
    signal.alarm(0)


