#!/usr/bin/env python3
"""torch.topk as a peer arm for gvr-bench: `scripts/peer.py --peer torch`.

Kept so that existing command lines keep working; everything (options, the
exactness check, the timing methods) is in scripts/peer.py.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from peer import *  # noqa: E402,F401,F403 (the module's functions, for tests and callers)
from peer import main  # noqa: E402

if __name__ == "__main__":
    main(default_peer="torch")
