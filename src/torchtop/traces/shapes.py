"""The operators' recorded arguments (`record_shapes=True`): kept as JSON text, decoded late.

A trace recorded with shapes gives every CPU operator `Input Dims`, `Input type` and often
`Concrete Inputs`. Building those nested lists for every operator would cost the reader more
than the rest of the event, and only the few operators an analysis models need them. So the
decoder keeps each as `msgspec.Raw` (the bytes of the JSON value, not parsed), the columns keep
one small integer per operator into a table of the distinct argument triples (a training loop
repeats a few hundred shapes millions of times), and `decoded` parses one triple on demand.
A triple is one bytes object, its three JSON texts joined by a NUL byte (JSON text never holds
one): joined straight from the `Raw` values, it costs one allocation per operator and no tuple
for the garbage collector to track (a tuple of three `bytes` cost the reader 40% more).

`msgspec.Raw` points into the buffer it was decoded from, so the decoder hands it an immutable
copy of each piece (`decode.PieceDecoder`): the reader's own buffer is cut and refilled while a
batch is still referenced. The bytes are copied out of the `Raw` here, batch by batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from torchtop.traces.data import NO_ID, Ints
from torchtop.traces.schema import EventArgs

ShapeKey = bytes
"""An operator's `Input Dims` (in either spelling: PyTorch 1.8 and 1.9 wrote `Input dims`),
`Input type` and `Concrete Inputs`, each as its JSON text (empty where the event has none),
joined by `SEPARATOR`: four parts, the two spellings of the dims first (one of them empty)."""

SEPARATOR = b"\0"
NO_SHAPE: ShapeKey = SEPARATOR * 3
_ARGUMENTS = attrgetter("input_dims", "input_dims_lower", "input_type", "concrete_inputs")


class ShapeTable:
    """Interns argument triples to codes, like `columns.Interner` does names."""

    def __init__(self) -> None:
        self.codes: dict[ShapeKey, int] = {}
        self.values: list[ShapeKey] = []

    def code_all(self, args: Sequence[EventArgs]) -> Ints:
        """One code per operator; the bytes leave the `Raw` values here."""
        return self.codes_of(list(map(SEPARATOR.join, map(_ARGUMENTS, args))))

    def codes_of(self, keys: list[ShapeKey]) -> Ints:
        codes = list(map(self.codes.get, keys))
        if None in codes:
            for key in dict.fromkeys(keys):
                if key not in self.codes:
                    self.codes[key] = len(self.values)
                    self.values.append(key)
            codes = list(map(self.codes.get, keys))
        return np.array(codes, dtype=np.int32)

    def canonical(self) -> tuple[list[ShapeKey], Ints]:
        """The table sorted (so a parallel read gives a serial one's codes) without the empty
        triple, and the old code -> new code table (NO_ID: the operator recorded no shape)."""
        kept = sorted(key for key in self.values if key != NO_SHAPE)
        position = {key: index for index, key in enumerate(kept)}
        table = np.array([position.get(key, NO_ID) for key in self.values], dtype=np.int32)
        return kept, table


def decoded(key: ShapeKey) -> tuple[list[Any], list[Any], list[Any]]:
    """The triple as the trace's JSON values (lists; empty where not recorded or not lists)."""
    dims, types, concrete = parts(key)
    return _as_list(dims), _as_list(types), _as_list(concrete)


def parts(key: ShapeKey) -> tuple[bytes, bytes, bytes]:
    """The key's dims (whichever spelling was written), types and concrete inputs, as JSON text."""
    dims, dims_lower, types, concrete = key.split(SEPARATOR)
    return dims or dims_lower, types, concrete


def _as_list(text: bytes) -> list[Any]:
    if not text:
        return []
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return []
    return value if isinstance(value, list) else []
