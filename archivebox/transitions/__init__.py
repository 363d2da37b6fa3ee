"""State graphs and transitions: one function per declared edge, one CAS write each.

A transition never branches and never does I/O: it writes the row once (see
:func:`archivebox.transitions.cas.move`) and, if the write won, enqueues its side
effects after the commit.
"""
