"""Chaos ledger hook (foreground, step 1): records its run in the ledger (see ledger.py)."""
import os
import sys

LEDGER = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "ledger.py")
exec(compile(open(LEDGER).read(), LEDGER, "exec"))  # noqa: S102 - the shared body beside this file
run()  # noqa: F821 - defined by ledger.py
