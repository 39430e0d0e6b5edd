"""When this copy of the package was first imported, on the wall clock.

The package's ``__init__`` imports this module before anything else, so every module of
the package is read from disk at or after :data:`LOADED_AT`: a source file whose status
has not changed since then is the code the process runs. ``prove.lemma_cache`` relies on
that before it trusts a fingerprint of the files. A reload (of this module or the package)
keeps the first value, since modules loaded before it may still be in use.

>>> import time
>>> from layout_algebra.model import _loaded
>>> _loaded.LOADED_AT <= time.time()
True
"""

import time

#: Seconds since the epoch at the package's first import in this process.
LOADED_AT: float = float(globals().get("LOADED_AT", time.time()))
