"""The name of the node (machine) this process runs on, as every part of torchtop spells it.

`TORCHTOP_NODE` wins when set: containers share hostnames, and tests run several "nodes" on one
machine. Otherwise the hostname, as `socket.gethostname()` gives it. One function, so the run
folder, the report and the metrics' `node` label never disagree.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

NODE_VARIABLE = "TORCHTOP_NODE"


def node_name(env: Mapping[str, str] | None = None) -> str:
    """`TORCHTOP_NODE` when set and not blank, else the hostname."""
    chosen = (os.environ if env is None else env).get(NODE_VARIABLE, "").strip()
    return chosen or socket.gethostname()
