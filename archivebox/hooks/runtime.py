"""What every hook run gets from the engine itself, whatever its plugin's config.json says.

abx-plugins keeps the keys all its hooks share in a ``base`` plugin whose config.json has
no hooks, only a schema (``ABX_RUNTIME``, ``TMP_DIR``, ``ABXPKG_LIB_DIR``,
``PERSONAS_DIR``, ``NODE_MODULES_DIR``, ``MEMORY_LIMIT``, ...). When such a plugin is on
the plugin path, its keys are resolved for every hook like the hook's own keys (a
crawl's or the environment's value first, then :func:`defaults`, then the schema's
``default``), and empty values are left out, as unset.

Whatever the schemas say, :func:`fixed` values are set last: ``ABX_RUNTIME=archivebox``
(hooks such as search_backend_sqlite only index under ArchiveBox's runtime) and the
folders of the run: ``DATA_DIR``, ``CRAWL_DIR``, and ``SNAP_DIR`` (a snapshot's folder;
for a crawl's own hooks, the crawl's folder, as abx-dl gives a run's hooks its folder).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

# The plugin whose config.json holds the keys every hook shares (abx-plugins' layout).
BASE_PLUGIN = "base"
RUNTIME_NAME = "archivebox"


def defaults(data_dir: Path, machine_guid: str) -> dict[str, str]:
    """The base keys' values that depend on the collection and the machine (a user's own
    value wins over them): local scratch space per machine under the data dir, as
    ArchiveBox keeps it, shared tools in ``<data>/lib``, personas in ``<data>/personas``."""
    machine = hashlib.sha256(machine_guid.encode()).hexdigest()[:8]
    return {
        "TMP_DIR": str(data_dir / "tmp" / machine),
        "ABXPKG_LIB_DIR": str(data_dir / "lib"),
        "PERSONAS_DIR": str(data_dir / "personas"),
    }


def fixed(data_dir: Path, crawl_dir: Path, snap_dir: Path | None) -> dict[str, str]:
    """The values a hook always gets, set after every schema's."""
    return {
        "ABX_RUNTIME": RUNTIME_NAME,
        "DATA_DIR": str(data_dir),
        "CRAWL_DIR": str(crawl_dir),
        "SNAP_DIR": str(snap_dir if snap_dir is not None else crawl_dir),
    }
