"""The models, one module per concern."""

from archivebox.core.models.archiveresult import ArchiveResult
from archivebox.core.models.crawl import SNAPSHOTS_STEP, Crawl
from archivebox.core.models.host import Host, RobotsTxt
from archivebox.core.models.lease import Lease
from archivebox.core.models.machine import Machine
from archivebox.core.models.process import Process
from archivebox.core.models.schedule import Schedule
from archivebox.core.models.snapshot import Snapshot
from archivebox.core.models.tag import Tag

__all__ = ["ArchiveResult", "Crawl", "Host", "Lease", "Machine", "Process", "RobotsTxt", "Schedule", "SNAPSHOTS_STEP", "Snapshot", "Tag"]
