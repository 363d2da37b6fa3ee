"""Which hook runs get the worker's shared browser, and how they learn where it is.

A plugin asks for the browser by declaring ``CHROME_CDP_URL`` in its config.json (as
abx-plugins' chrome plugin does). Unless the user set that key to a browser of their own,
its hook run holds a tab of this worker's browser (:class:`archivebox.process.browser.Lease`)
for as long as it runs, and finds the endpoint two ways:

- the ``CHROME_CDP_URL`` environment variable (authoritative: it is this machine's browser),
  with ``CHROME_KEEPALIVE=true`` (abx-plugins' hooks close a browser they were given
  otherwise: this one is the engine's);
- abx-plugins' files in the crawl's ``chrome/`` folder: ``cdp_url.txt``, ``chrome.pid``
  and ``browser.json`` (``{"ready": true, "extensions": []}``), so that third-party hooks
  that look there share it too. Several machines may archive one crawl; the files name the
  browser of the last one that wrote them.

Without a browser (none installed, it failed to start) the hook runs without the variable
and says why it cannot capture (the built-in ones report ``skipped``).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path

from archivebox.process.browser import BROWSER, BrowserUnavailable, Lease
from archivebox.sideeffects.index import atomic_write

logger = logging.getLogger(__name__)

ENDPOINT_KEY = "CHROME_CDP_URL"
TARGET_FILE = "target_id.txt"
KEEPALIVE_KEY = "CHROME_KEEPALIVE"
TAB_FILE_KEY = "CHROME_TAB_FILE"


def wants_browser(schema: Mapping[str, object], config_env: Mapping[str, str]) -> bool:
    """A plugin that declares CHROME_CDP_URL, and whose user did not point it elsewhere."""
    return ENDPOINT_KEY in schema and not config_env.get(ENDPOINT_KEY)


@contextlib.contextmanager
def browser_for(schema: Mapping[str, object], env: MutableMapping[str, str], crawl_dir: Path,
                hook_dir: Path, background: bool = False) -> Iterator[Lease | None]:
    """Hold a tab of the shared browser for a hook run that wants one (None otherwise, or
    when there is no browser), putting its endpoint in ``env`` and the crawl's folder.
    Afterwards the tab the hook named in ``target_id.txt`` (abx-plugins' marker) is closed,
    in case the hook died before it closed it. A ``background`` hook (a service that lives
    as long as its crawl) gets the endpoint without holding one of the tabs."""
    if not wants_browser(schema, env):
        yield None
        return
    with contextlib.ExitStack() as held:
        try:
            lease = BROWSER.endpoint() if background else held.enter_context(BROWSER.lease())
        except BrowserUnavailable as err:
            logger.info("no shared browser for this hook: %s", err)
            lease = None
        if lease is not None:
            env[ENDPOINT_KEY] = lease.cdp_url
            # The browser is the engine's: abx-plugins' hooks close a browser they were
            # given (Browser.close at their cleanup) unless told to keep it alive.
            env[KEEPALIVE_KEY] = "true"
            if lease.tab_file:  # the tab slot's file: the chrome hook passes its tab on through it
                env[TAB_FILE_KEY] = lease.tab_file
            publish(crawl_dir / "chrome", lease)
            held.callback(close_left_tab, lease, hook_dir / TARGET_FILE)
        yield lease


def close_left_tab(lease: Lease, marker: Path) -> None:
    try:
        target_id = marker.read_text().strip()
    except FileNotFoundError:
        return
    except OSError as err:
        logger.warning("could not read %s: %s", marker, err)
        return
    BROWSER.close_tab(lease, target_id)


def publish(folder: Path, lease: Lease) -> None:
    """Write abx-plugins' session files for ``lease``'s browser (unchanged ones are left be)."""
    files = {
        "cdp_url.txt": lease.cdp_url,
        "chrome.pid": str(lease.pid),
        "browser.json": json.dumps({"ready": True, "extensions": [], "managed_by": "archivebox"}, indent=2),
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            path = folder / name
            with contextlib.suppress(OSError):
                if path.read_text() == text:
                    continue
            atomic_write(path, text.encode())  # a temp file of its own: hook runs publish at once
    except OSError as err:
        # The environment variable still tells the hook; only third-party readers miss out.
        logger.warning("could not publish the browser endpoint in %s: %s", folder, err)


def lost(lease: Lease | None) -> bool:
    """Did the browser a hook run used crash or hang under it (not the hook's doing)?"""
    return lease is not None and BROWSER.lost(lease.generation)
