"""Opening the collections ArchiveBox (0.4 to 0.9) made: ``archivebox init`` upgrades them in place.

:mod:`~archivebox.upgrade.legacy` reads an old index whatever its version,
:mod:`~archivebox.upgrade.folders` moves snapshot folders to this engine's layout,
:mod:`~archivebox.upgrade.importer` writes the rows, :mod:`~archivebox.upgrade.run` puts
the steps in an order that an interruption cannot hurt. :mod:`~archivebox.upgrade.known`
lists ArchiveBox's migrations, to refuse an index a newer ArchiveBox made.
"""
