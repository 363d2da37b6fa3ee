"""One page load in a tab of a Chromium reached over CDP, and the captures made from it.

Used by the ``chrome`` plugin's hook (and any plugin that wants the same): :func:`visit_page`
connects with Playwright to ``CHROME_CDP_URL`` (or launches a binary), opens a tab in a
fresh browser context, loads the page, lets it settle, scrolls it, and writes each asked-for
capture (:data:`CAPTURES`) into the current folder; :class:`Visit` is what it saw.
Imported only by the hooks that drive a browser (asyncio and Playwright are heavy).
"""

import asyncio
import http.cookiejar
import os
import time

from .env import env_bool, env_float, env_int, env_str
from .files import write_atomic
from .output import log

# The browser plugins a page load captures for, with the file each gets.
CAPTURES = {
    "title": "title.txt",
    "dom": "output.html",
    "mhtml": "page.mhtml",
    "screenshot": "screenshot.png",
    "pdf": "output.pdf",
}
TARGET_FILE = "target_id.txt"
STEP_TIMEOUT = 20.0  # seconds for one capture
PROBE_TIMEOUT = 2.0  # seconds a page's main thread may take to answer before it counts as stuck
MAX_CONSOLE = 500
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-breakpad", "--hide-scrollbars", "--mute-audio", "--disable-dev-shm-usage"]

# Scripts that render a page often do it just after its load event: wait until the DOM has
# not changed for quietMs (at most limitMs). Returns how long it waited.
QUIET_MS = 300
QUIET_LIMIT = 3.0
QUIET_JS = """async ([quietMs, limitMs]) => {
  const start = Date.now();
  let last = start;
  const observer = new MutationObserver(() => { last = Date.now(); });
  observer.observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
  while (Date.now() - last < quietMs && Date.now() - start < limitMs) {
    await new Promise(resolve => setTimeout(resolve, 50));
  }
  observer.disconnect();
  return Date.now() - start;
}"""

# Scroll down one window at a time until the bottom stays put (lazy content loaded) or the
# time is up, then back to the top.
SCROLL_JS = """async (limitMs) => {
  const start = Date.now();
  if (document.documentElement.scrollHeight <= window.innerHeight) {
    return {height: document.documentElement.scrollHeight, ms: 0};  // nothing below the window
  }
  let lastHeight = -1;
  while (Date.now() - start < limitMs) {
    const height = document.documentElement.scrollHeight;
    window.scrollBy(0, window.innerHeight);
    await new Promise(resolve => setTimeout(resolve, 100));
    if (window.scrollY + window.innerHeight >= height && height === lastHeight) break;
    lastHeight = height;
  }
  window.scrollTo(0, 0);
  return {height: document.documentElement.scrollHeight, ms: Date.now() - start};
}"""


def window_size():
    width, height = (int(v) for v in env_str("CHROME_RESOLUTION", "1440,2000").split(",", 1))
    return {"width": max(100, min(width, 10000)), "height": max(100, min(height, 20000))}


class Visit:
    """What one page load saw, written to navigation.json."""

    def __init__(self, url):
        self.info = {"url": url, "final_url": None, "status": None, "status_text": "", "headers": {},
                     "redirects": [], "loaded": None, "load_ms": None, "console": [], "page_errors": [],
                     "dialogs": [], "popups": [], "scripts_stopped": False, "scroll": None, "captures": {}}
        self.main_response = None

    def watch(self, page):
        page.on("console", self._console)
        page.on("pageerror", lambda err: self._append("page_errors", str(err)[:1000]))
        page.on("dialog", self._dialog)
        page.on("response", self._response)
        page.on("popup", self._popup)

    def _append(self, key, item):
        if len(self.info[key]) < MAX_CONSOLE:
            self.info[key].append(item)

    def _console(self, message):
        self._append("console", {"type": message.type, "text": message.text[:2000]})

    def _dialog(self, dialog):
        self._append("dialogs", {"type": dialog.type, "message": dialog.message[:1000]})
        asyncio.ensure_future(dialog.dismiss())

    def _popup(self, popup):
        self._append("popups", popup.url)
        asyncio.ensure_future(popup.close())

    def _response(self, response):
        request = response.request
        if request.is_navigation_request() and response.frame.parent_frame is None:
            self.main_response = response

    async def record_response(self):
        response = self.main_response
        if response is None:
            return
        hops, request = [], response.request.redirected_from
        while request is not None:
            previous = await request.response()
            hops.append({"url": request.url, "status": previous.status if previous else None})
            request = request.redirected_from
        self.info.update(final_url=response.url, status=response.status, status_text=response.status_text,
                         headers=await response.all_headers(), redirects=list(reversed(hops)))


def load_cookies(path):
    """The cookies of a Netscape cookies.txt (a persona's ``COOKIES_FILE``) as Playwright
    wants them; none when there is no such file."""
    if not path or not os.path.isfile(path):
        return []
    jar = http.cookiejar.MozillaCookieJar(path)
    try:
        jar.load(ignore_discard=True, ignore_expires=True)
    except (OSError, http.cookiejar.LoadError) as err:
        log(f"WARNING: cannot read COOKIES_FILE: {err}")
        return []
    return [{"name": c.name, "value": c.value or "", "domain": c.domain, "path": c.path or "/", "secure": bool(c.secure),
             **({"expires": float(c.expires)} if c.expires else {})} for c in jar]


async def bounded(awaitable, seconds=STEP_TIMEOUT):
    return await asyncio.wait_for(awaitable, seconds)


async def responsive(page):
    try:
        await bounded(page.evaluate("1"), PROBE_TIMEOUT)
        return True
    except asyncio.TimeoutError:
        return False


async def unstick(page, cdp, visit):
    """Stop a script that never yields, and keep further scripts from running."""
    if await responsive(page):
        return
    log("the page's script does not yield: stopping it and disabling scripts")
    visit.info["scripts_stopped"] = True
    await bounded(cdp.send("Emulation.setScriptExecutionDisabled", {"value": True}), PROBE_TIMEOUT)
    await bounded(cdp.send("Runtime.terminateExecution"), PROBE_TIMEOUT)


async def capture(name, page, cdp, full_page):
    """The bytes (or text) of one capture."""
    if name == "title":
        return (await page.title()).strip() + "\n"
    if name == "dom":
        return await page.content()
    if name == "mhtml":
        return (await cdp.send("Page.captureSnapshot", {"format": "mhtml"}))["data"]
    if name == "screenshot":
        return await page.screenshot(full_page=full_page, type="png", timeout=STEP_TIMEOUT * 1000)
    if name == "pdf":
        return await page.pdf(print_background=True)
    raise ValueError(name)


async def load(page, cdp, visit, url, pageload_timeout):
    from playwright.async_api import TimeoutError as LoadTimeout

    started = time.monotonic()
    try:
        await page.goto(url, wait_until="load", timeout=pageload_timeout * 1000)
        visit.info["loaded"] = "load"
    except LoadTimeout:
        visit.info["loaded"] = "timeout"
        log(f"the page did not finish loading within {pageload_timeout}s: capturing it as it is")
        await unstick(page, cdp, visit)
    visit.info["load_ms"] = round((time.monotonic() - started) * 1000)
    await visit.record_response()


async def visit_page(url, wanted, browser_source, deadline):
    from playwright.async_api import async_playwright

    visit = Visit(url)
    check_ssl = env_bool("CHROME_CHECK_SSL_VALIDITY", True, fallbacks=("CHECK_SSL_VALIDITY",))
    user_agent = env_str("CHROME_USER_AGENT", "", fallbacks=("USER_AGENT",)) or None
    async with async_playwright() as pw:
        kind, where = browser_source
        if kind == "cdp":
            browser = await pw.chromium.connect_over_cdp(where, timeout=20_000)
        else:
            browser = await pw.chromium.launch(executable_path=where, args=FLAGS, timeout=20_000)
        try:
            # A browser context of its own per page: no cookies shared between snapshots, and
            # a window of its own (tabs behind another in one window are not painted). It costs
            # Chromium about half a CPU-second of its own per page, measured here.
            context = await browser.new_context(viewport=window_size(), user_agent=user_agent,
                                                ignore_https_errors=not check_ssl, accept_downloads=False)
            cookies = load_cookies(env_str("COOKIES_FILE", ""))
            if cookies:
                await context.add_cookies(cookies)
            page = await context.new_page()
            cdp = await context.new_cdp_session(page)
            await note_target(cdp)
            visit.watch(page)
            await load(page, cdp, visit, url, env_int("CHROME_PAGELOAD_TIMEOUT", 30, fallbacks=()))
            status = visit.info["status"]
            if status is not None and status >= 400:
                await bounded(context.close(), PROBE_TIMEOUT * 2)
                return visit
            await settle(page, visit, deadline)
            for name in wanted:
                await save_capture(name, page, cdp, visit, deadline)
            await bounded(context.close(), PROBE_TIMEOUT * 2)
        finally:
            await bounded(browser.close(), PROBE_TIMEOUT * 2)
    return visit


async def note_target(cdp):
    """Write the tab's target id to ``target_id.txt`` (as abx-plugins' chrome hooks do): if
    this hook dies before it closes its tab, the engine closes it."""
    info = await bounded(cdp.send("Target.getTargetInfo"), PROBE_TIMEOUT * 2)
    write_atomic(TARGET_FILE, info["targetInfo"]["targetId"])


async def settle(page, visit, deadline):
    """Let scripts run: CHROME_DELAY_AFTER_LOAD, then until the DOM has been still for
    QUIET_MS (at most QUIET_LIMIT); then scroll to the bottom and back."""
    delay = min(env_float("CHROME_DELAY_AFTER_LOAD", 0.0), max(0.0, deadline - time.monotonic() - 5))
    if delay > 0:
        await asyncio.sleep(delay)
    if visit.info["scripts_stopped"]:
        return
    limit = min(QUIET_LIMIT, max(0.0, deadline - time.monotonic() - 5))
    try:
        visit.info["settled_ms"] = await bounded(page.evaluate(QUIET_JS, [QUIET_MS, int(limit * 1000)]), limit + PROBE_TIMEOUT)
    except (asyncio.TimeoutError, Exception) as err:  # a page that will not settle is still captured
        visit.info["settled_ms"] = {"error": str(err)[:300] or "timed out"}
    if not env_bool("CHROME_SCROLL_TO_BOTTOM", True):
        return
    limit = min(env_float("CHROME_SCROLL_TIMEOUT", 5.0), max(0.0, deadline - time.monotonic() - 5))
    try:
        visit.info["scroll"] = await bounded(page.evaluate(SCROLL_JS, int(limit * 1000)), limit + PROBE_TIMEOUT)
    except (asyncio.TimeoutError, Exception) as err:  # a page that broke scrolling is still captured
        visit.info["scroll"] = {"error": str(err)[:300] or "timed out"}


async def save_capture(name, page, cdp, visit, deadline, tries=2):
    """Make one capture and write its file; an error is noted in the visit (the capture's
    plugin reports it). An error that is not a timeout is tried again once: Chromium's
    printing and screenshots fail now and then on a busy machine."""
    path = CAPTURES[name]
    for attempt in range(1, tries + 1):
        left = deadline - time.monotonic()
        if left <= 1:
            visit.info["captures"][name] = {"error": "no time left in CHROME_TIMEOUT"}
            return
        try:
            data = await bounded(capture(name, page, cdp, env_bool("SCREENSHOT_FULL_PAGE", True)), min(STEP_TIMEOUT, left))
        except asyncio.TimeoutError:
            visit.info["captures"][name] = {"error": f"timed out after {min(STEP_TIMEOUT, left):.0f}s"}
            return
        except Exception as err:
            if is_gone(err):
                raise
            visit.info["captures"][name] = {"error": str(err).splitlines()[0][:300]}
            log(f"{name} capture failed (try {attempt} of {tries}): {visit.info['captures'][name]['error']}")
            await asyncio.sleep(0.2)
            continue
        write_atomic(path, data)
        visit.info["captures"][name] = {"file": path, "bytes": os.path.getsize(path)}
        return


def is_gone(err):
    """Did the browser (or its connection) go away?"""
    text = str(err).lower()
    return any(marker in text for marker in ("has been closed", "browser closed", "connection closed",
                                                "target closed", "websocket", "econnrefused"))


# net::ERR_* codes that retrying will not fix
PERMANENT_NET_ERRORS = {
    "net::ERR_UNSAFE_PORT", "net::ERR_INVALID_URL", "net::ERR_DISALLOWED_URL_SCHEME",
    "net::ERR_UNKNOWN_URL_SCHEME", "net::ERR_BLOCKED_BY_CLIENT", "net::ERR_BLOCKED_BY_RESPONSE",
    "net::ERR_BLOCKED_BY_ADMINISTRATOR", "net::ERR_INVALID_REDIRECT", "net::ERR_TOO_MANY_REDIRECTS",
    "net::ERR_UNSAFE_REDIRECT", "net::ERR_NAME_NOT_RESOLVED",
}


class VisitFailed(Exception):
    """The page could not be loaded; ``permanent``: retrying will not help."""

    def __init__(self, reason, permanent=False):
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


def visit(url, wanted, source, timeout):
    """Load ``url`` once and write the ``wanted`` captures (names of :data:`CAPTURES`) in the
    current folder, all within ``timeout`` seconds. ``source``: ``("cdp", endpoint)`` or
    ``("launch", binary)``. Returns the :class:`Visit`; raises :class:`VisitFailed`."""
    deadline = time.monotonic() + timeout - 2
    try:
        return asyncio.run(asyncio.wait_for(visit_page(url, wanted, source, deadline), timeout - 1))
    except asyncio.TimeoutError:
        raise VisitFailed(f"timed out after {timeout}s") from None
    except Exception as err:
        text = str(err)
        marker = text.find("net::ERR_")
        code = text[marker:].split()[0] if marker != -1 else None
        if code:
            raise VisitFailed(f"page load failed: {code}", permanent=code in PERMANENT_NET_ERRORS) from None
        first = text.splitlines()[0][:200] if text else ""
        if is_gone(err):
            raise VisitFailed(f"the browser went away: {first}") from None
        raise VisitFailed(f"{type(err).__name__}: {first}") from None
