"""Headless Chromium for the screenshot, pdf and dom hooks (one run per capture).

Moved verbatim from the former ``plugins/_lib/hooklib.py``: :func:`chrome_hook` is the
shared body of those hooks (render ``--url`` with Chromium's own flags, validate the
file, move it into place), :func:`run_chrome` one Chromium run in a throw-away profile.
"""

import os

from .env import env_bool, env_str, is_http_url, start, timeout_for
from .files import read_json, sibling_path
from .net import is_transient_status
from .output import finish, log, transient
from .procs import install_sigterm_handler, run_cmd, which

CHROME_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")

CHROME_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--mute-audio", "--hide-scrollbars", "--disable-dev-shm-usage",
    "--disable-extensions", "--disable-breakpad", "--no-default-browser-check",
    "--password-store=basic", "--use-mock-keychain",
)


def chrome_binary():
    """``(path, configured)``: CHROME_BINARY resolved on PATH, else the first candidate found.

    ``path`` is None when nothing usable exists.
    """
    configured = env_str("CHROME_BINARY")
    if configured:
        return which(configured), configured
    for name in CHROME_CANDIDATES:
        path = which(name)
        if path:
            return path, None
    return None, None


def chrome_skip_reason(configured):
    if configured:
        return f"chromium not installed (CHROME_BINARY={configured} not found)"
    return "chromium not installed (none of " + ", ".join(CHROME_CANDIDATES) + " on PATH)"


def http_error_from_headers():
    """``"404 Not Found"`` if the headers hook recorded a permanent HTTP error for this snapshot, else None."""
    info = read_json(sibling_path("headers", "headers.json"), None)
    if isinstance(info, dict) and isinstance(info.get("status"), int) and info["status"] >= 400 \
            and not is_transient_status(info["status"]):
        return f"{info['status']} {info.get('reason') or ''}".strip()
    return None


def run_chrome(binary, url, action_args, timeout, stdout_path=None, user_agent=None, extra_args=()):
    """Run headless Chromium once on ``url`` with ``action_args`` (e.g. ``--screenshot=x.png``).

    Uses a fresh temporary profile (removed afterwards) and kills the whole
    process group on timeout. Returns ``(CmdResult, net_error)`` where
    ``net_error`` is Chromium's ``net::ERR_*`` text if the page failed to load.
    """
    import shutil
    import tempfile
    # Chromium's singleton socket lives under the profile/TMPDIR and a unix socket
    # path must stay under ~107 bytes: use a short base folder
    base = tempfile.gettempdir()
    if len(base) > 40 and os.path.isdir("/tmp"):
        base = "/tmp"
    profile = tempfile.mkdtemp(prefix="abx-chrome-", dir=base)
    try:
        cmd = [binary, *CHROME_FLAGS, f"--user-data-dir={profile}"]
        if user_agent:
            cmd.append(f"--user-agent={user_agent}")
        cmd += list(extra_args) + list(action_args) + [url]
        env = dict(os.environ)
        env.setdefault("DBUS_SESSION_BUS_ADDRESS", "disabled:")
        env["HOME"] = profile  # keep Chromium's caches/crash dirs out of the real HOME
        env["TMPDIR"] = profile  # and its temporary files: all removed below
        result = run_cmd(cmd, timeout=timeout, env=env, stdout_path=stdout_path)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    text = result.stderr.decode("utf-8", "replace")
    net_error = None
    marker = "Page load failed: "
    pos = text.find(marker)
    if pos != -1:
        net_error = text[pos + len(marker):].split()[0] if text[pos + len(marker):].split() else "page load failed"
    return result, net_error


def chrome_log_tail(result, lines=8):
    """Last meaningful stderr lines of a Chromium run (D-Bus noise dropped)."""
    text = result.stderr.decode("utf-8", "replace").splitlines()
    useful = [t for t in text if "dbus" not in t.lower() and "unexpected operator" not in t]
    return "\n".join(useful[-lines:])


# net::ERR_* codes that retrying will not fix
PERMANENT_NET_ERRORS = {
    "net::ERR_UNSAFE_PORT", "net::ERR_INVALID_URL", "net::ERR_DISALLOWED_URL_SCHEME",
    "net::ERR_UNKNOWN_URL_SCHEME", "net::ERR_BLOCKED_BY_CLIENT", "net::ERR_BLOCKED_BY_RESPONSE",
    "net::ERR_BLOCKED_BY_ADMINISTRATOR", "net::ERR_INVALID_REDIRECT", "net::ERR_TOO_MANY_REDIRECTS",
    "net::ERR_UNSAFE_REDIRECT",
}


def chrome_hook(plugin, output_name, action_args, validate, capture_stdout=False, extra_args=()):
    """Shared body of the Chromium hooks (screenshot, pdf, dom).

    Renders ``--url`` with ``action_args(tmp_path)`` (for ``capture_stdout``
    hooks Chromium's stdout goes to the temporary file), checks the result with
    ``validate(tmp_path) -> (ok, output_json_or_reason)`` and moves it to
    ``output_name``. Skipped when no Chromium binary exists; failed (exit 0) when
    ``headers.json`` recorded an HTTP error or the page's net error is permanent;
    non-zero exit on timeouts, transient net errors and crashes.
    """
    args = start(plugin)
    url = args["url"]
    if not is_http_url(url):
        finish("skipped", "not an http(s) URL")
    binary, configured = chrome_binary()
    if not binary:
        finish("skipped", chrome_skip_reason(configured))
    http_error = http_error_from_headers()
    if http_error:
        finish("failed", http_error, {"reason": "HTTP error recorded by the headers hook"})
    timeout = timeout_for(plugin, 60)
    check_ssl = env_bool(f"{plugin.upper()}_CHECK_SSL_VALIDITY", True, fallbacks=("CHECK_SSL_VALIDITY",))
    install_sigterm_handler()
    flags = list(extra_args)
    if not check_ssl:
        flags.append("--ignore-certificate-errors")
    tmp = os.path.abspath(f".{output_name}.partial{os.path.splitext(output_name)[1]}")
    try:
        result, net_error = run_chrome(
            binary, url, [] if capture_stdout else action_args(tmp), timeout,
            stdout_path=tmp if capture_stdout else None,
            extra_args=flags + (action_args(tmp) if capture_stdout else []),
            user_agent=env_str(f"{plugin.upper()}_USER_AGENT", "", fallbacks=("USER_AGENT",)) or None,
        )
        if result.timed_out:
            transient(f"chromium timed out after {timeout}s")
        if net_error:
            if net_error in PERMANENT_NET_ERRORS:
                finish("failed", f"page load failed: {net_error}")
            transient(f"page load failed: {net_error}")
        ok, detail = validate(tmp) if os.path.isfile(tmp) else (False, "no output file")
        if not ok:
            log(chrome_log_tail(result))
            transient(f"chromium (exit {result.returncode}) produced no usable output: {detail}")
        os.replace(tmp, output_name)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    summary = {"bytes": os.path.getsize(output_name)}
    if isinstance(detail, dict):
        summary.update(detail)
    finish("succeeded", output_name, summary)
