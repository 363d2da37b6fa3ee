from archivebox.cli import entry

entry()
