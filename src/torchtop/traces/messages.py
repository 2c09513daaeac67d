"""The collectives' own records, kept with their sizes: `record_param_comms` operators.

PyTorch's c10d writes one `record_param_comms` CPU operator per collective call, with the
message's element counts (`In msg nelems`, `Out msg nelems`), `dtype`, `Group size` and
`Collective name`; newer NCCL kernels repeat the same args, older and RCCL ones do not, so the
operator is the one source every trace with sizes has. Only operators that carry a
`Collective name` are kept, apart from the other operators, so that no existing column changes.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter

import numpy as np

from torchtop.traces.data import Floats, Messages
from torchtop.traces.schema import EventArgs

# Bytes per element of the dtype names c10d writes (`c10::ScalarType` names).
ELEMENT_BYTES = {
    "Float": 4.0,
    "Double": 8.0,
    "Half": 2.0,
    "BFloat16": 2.0,
    "Long": 8.0,
    "Int": 4.0,
    "Short": 2.0,
    "Char": 1.0,
    "Byte": 1.0,
    "Bool": 1.0,
    "ComplexFloat": 8.0,
    "ComplexDouble": 16.0,
    "ComplexHalf": 4.0,
    "Float8_e4m3fn": 1.0,
    "Float8_e5m2": 1.0,
    "Float8_e4m3fnuz": 1.0,
    "Float8_e5m2fnuz": 1.0,
    "UInt16": 2.0,
    "UInt32": 4.0,
    "UInt64": 8.0,
}

_COLLECTIVE = attrgetter("collective_name")
_IN, _OUT = attrgetter("in_msg_nelems"), attrgetter("out_msg_nelems")
_DTYPE, _GROUP = attrgetter("dtype"), attrgetter("group_size")


class MessageColumns:
    """Accumulates the collective operators of a file piece by piece, like `SpanColumns`."""

    def __init__(self) -> None:
        self.names: dict[object, int] = {}
        self.parts: list[tuple[int, dict[str, np.ndarray]]] = []

    def add(
        self,
        args: list[EventArgs],
        start: Floats,
        dur: Floats,
        piece: int,
        floats: Callable[[list[object]], Floats],
    ) -> None:
        """Keep the operators among `args` (one per event) that name a collective; `floats` is
        the columns' lenient conversion (missing or odd values become NaN)."""
        names = list(map(_COLLECTIVE, args))
        keep = [n is not None for n in names]
        if not any(keep):
            return
        mask = np.array(keep, dtype=np.bool_)
        kept = [a for a, k in zip(args, keep, strict=True) if k]
        columns = {
            "start": start[mask],
            "dur": dur[mask],
            "collective": np.array(
                [self.names.setdefault(n, len(self.names)) for n in names if n is not None],
                dtype=np.int64,
            ),
            "in": floats(list(map(_IN, kept))),
            "out": floats(list(map(_OUT, kept))),
            "element": np.array(
                [ELEMENT_BYTES.get(str(d), np.nan) for d in map(_DTYPE, kept)], dtype=np.float64
            ),
            "group": floats(list(map(_GROUP, kept))),
        }
        self.parts.append((piece, columns))

    def merge(self, other: MessageColumns) -> None:
        """Take in what another builder read from other pieces of the same file."""
        table = np.array(
            [self.names.setdefault(n, len(self.names)) for n in other.names], dtype=np.int64
        )
        for piece, columns in other.parts:
            self.parts.append((piece, {**columns, "collective": table[columns["collective"]]}))

    def messages(self, origin_us: float) -> Messages:
        """In file order, the names sorted so that a parallel read gives a serial one's arrays."""
        if not self.parts:
            return Messages()
        parts = [c for _, c in sorted(self.parts, key=lambda p: p[0])]

        def column(key: str) -> np.ndarray:
            return np.concatenate([c[key] for c in parts])

        raw = list(self.names)
        order = sorted(range(len(raw)), key=lambda c: str(raw[c]))
        table = np.empty(len(order), dtype=np.int64)
        table[order] = np.arange(len(order), dtype=np.int64)
        start = column("start") - origin_us
        return Messages(
            start_us=start,
            end_us=start + column("dur"),
            collective=table[column("collective")],
            names=[str(raw[c]) for c in order],
            in_nelems=column("in"),
            out_nelems=column("out"),
            element_bytes=column("element"),
            group_size=column("group"),
        )
