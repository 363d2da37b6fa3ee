"""The actor types of the engine: which rows each ticks, and how it decides."""

from archivebox.core.models import ArchiveResult, Crawl, Process, Snapshot
from archivebox.tasks import handlers
from archivebox.tasks.registry import ActorType
from archivebox.transitions import archiveresult, crawl, process, snapshot

CRAWL = ActorType("Crawl", Crawl, handlers.handle_crawl, crawl.transition_crawl_give_up, tuple(Crawl.graph.non_final()))
SNAPSHOT = ActorType("Snapshot", Snapshot, handlers.handle_snapshot, snapshot.transition_snapshot_give_up,
                     tuple(Snapshot.graph.non_final()), related=("crawl",))
ARCHIVE_RESULT = ActorType("ArchiveResult", ArchiveResult, handlers.handle_result, archiveresult.transition_archiveresult_give_up,
                           tuple(ArchiveResult.graph.non_final()), related=("snapshot", "crawl"))
PROCESS = ActorType("Process", Process, handlers.handle_process, process.transition_process_give_up, tuple(Process.graph.non_final()))

# Registered when Django starts (archivebox.apps), never as a side effect of importing this module.
ENGINE_ACTOR_TYPES = (CRAWL, SNAPSHOT, ARCHIVE_RESULT, PROCESS)
