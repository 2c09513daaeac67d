"""Stream a chrome-trace JSON document into batches of typed events, in bounded memory.

The event array is cut between two events (a `}` `,` `{` boundary) every few megabytes and each
piece is decoded on its own, so a 10 GB trace never sits in memory whole. A cut that falls inside
a string makes the piece invalid JSON (the string never closes), so a failed decode moves the cut
to an earlier boundary: the cut can never silently split an event. Two readers sharing a file
(`Share`) must cut where the other cuts without decoding its pieces, so they place every cut by
quote parity instead: a boundary after an even number of unescaped quotes is outside strings.

Real files break the JSON grammar in known ways; each is repaired only in the piece that needs it,
so clean files pay nothing: unquoted `N/A`, `NaN` or `Infinity` become `null`, invalid UTF-8 is
replaced. A file cut off mid-write (or a truncated `.gz`) keeps every whole event before the cut
and reports how many bytes were lost.
"""

from __future__ import annotations

import bisect
import re
import zlib
from collections.abc import Callable, Generator, Iterator
from typing import BinaryIO

import msgspec

from torchtop.traces.lenient import convert_events, convert_header
from torchtop.traces.schema import (
    EVENT_LIST_DECODER,
    HEADER_DECODER,
    TAIL_DECODER,
    Event,
    TraceHeader,
)
from torchtop.traces.set_aside import add_counts

BLOCK_BYTES = 2 << 20
"""How much one process decodes at a time. Small pieces keep the events of one piece, and the
buffer, in the cache and in memory already touched: on the 35 MB sample, 2 MB pieces read
12% faster end to end than 8 MB ones (median 0.485 s against 0.553 s, 15 alternating runs)
with a fifth fewer page faults; 1 MB gained nothing more, and the 1 GB trace took the same."""
_HEAD_LIMIT_BYTES = 256 << 20
_MAX_PENDING_BYTES = 256 << 20
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BAD_LITERALS = (b"N/A", b"NaN", b"Infinity")
_BAD_LITERAL = re.compile(rb"(?<=[:\[,])(\s*)(?:N/A|NaN|-?Infinity)(?=\s*[,\]}])")
_WHITESPACE = b" \t\r\n"
_UNREAD_KEYS = "could not read the keys after traceEvents"
_LEADING_WHITESPACE = re.compile(rb"[ \t\r\n]*")


class TraceFormatError(ValueError):
    """The bytes are not a chrome-trace document; the message says why, in one line."""


class DecodeStats(msgspec.Struct):
    """What the decoder saw beyond the events themselves."""

    bytes_decoded: int = 0
    lost_bytes: int = 0
    truncated: bool = False
    repaired_pieces: int = 0
    dropped_malformed: int = 0
    malformed_fields: dict[str, int] = msgspec.field(default_factory=dict)
    """The dropped malformed events by the field of the wrong type (`set_aside.field_of`)."""
    notes: list[str] = msgspec.field(default_factory=list)

    def merge(self, other: DecodeStats) -> None:
        """Add what a worker decoding other pieces of the same file saw (not the byte counts,
        which the reader keeps for the whole stream)."""
        self.repaired_pieces += other.repaired_pieces
        self.dropped_malformed += other.dropped_malformed
        add_counts(self.malformed_fields, other.malformed_fields)
        self.notes.extend(n for n in other.notes if n not in self.notes)


ProgressCallback = Callable[[], None]


class Share(msgspec.Struct, frozen=True):
    """This reader's share of a file that two readers read at once, split at stream position
    `split`.

    Both cut the very same pieces (`piece_bytes` long, at boundaries found from the bytes
    alone). The first reader decodes the pieces that start before `split` and stops there; the
    second skips them (cutting them all the same, which is cheap) and decodes the rest, then
    what follows the last piece (the end of the array, keys after it, a truncated end)."""

    split: int
    first: bool
    piece_bytes: int


class EventStream:
    """Iterate over batches of events from a binary stream holding one trace document.

    After iteration, `header` holds the document's other keys (before or after the array)
    and `stats` what had to be repaired or was lost.
    """

    def __init__(
        self,
        stream: BinaryIO,
        on_block: ProgressCallback | None = None,
        share: Share | None = None,
    ) -> None:
        self._stream = stream
        self._on_block = on_block
        self._share = share
        self._eof = False
        self._position = 0
        self.header = TraceHeader()
        self.stats = DecodeStats()
        self._pieces = PieceDecoder(self.stats)
        self.piece = -1
        """The index of the piece the last yielded batch came from (pieces are numbered in
        file order, the other reader's share included)."""

    @property
    def position(self) -> int:
        """How many bytes of the (inflated) document were read so far."""
        return self._position

    def __iter__(self) -> Iterator[list[Event]]:
        head, bare_array = self._read_head()
        # buf[0] is always the byte before the next event; it is set to '[' and the cut comma
        # to ']' so each piece decodes in place, through a memoryview, without being copied.
        buf = bytearray(b"[") + head
        offset = self._position - len(head)  # the stream position of buf[1]
        share = self._share
        piece = 0
        while not self._eof:
            buf += self._read_block()
            if share is None and len(buf) <= BLOCK_BYTES and not self._eof:
                continue  # alone, pieces are a block long, however the stream's reads fall
            while (cut := (yield from self._next_piece(buf, piece, offset))) is not None:
                piece += 1
                offset += cut
                del buf[:cut]
                buf[0] = 0x5B  # '['
                if share is None:
                    break  # alone: one piece per block
                if share.first and offset >= share.split:
                    return  # the first reader's share is done
            if len(buf) > _MAX_PENDING_BYTES:
                # No whole event in all that (one longer than the buffer): give up.
                raise TraceFormatError("malformed JSON: no event boundary in 256 MB")
        self.piece = piece
        if share is None or not share.first:
            yield from self._decode_tail(bytes(buf[1:]), bare_array)

    def _next_piece(
        self, buf: bytearray, piece: int, offset: int
    ) -> Generator[list[Event], None, int | None]:
        """Decode the next piece of buf (if it is this reader's); the cut made after it, or
        None when no piece can be cut before more is read."""
        share = self._share
        if share is None:
            boundary = _last_boundary(buf, len(buf))
            decoded = None if boundary is None else self._pieces.decode_before(buf, boundary)
            if decoded is None:
                return None
            events, cut = decoded
        else:
            shared_cut = self._shared_cut(buf, share.piece_bytes)
            if shared_cut is None:
                return None
            cut, events = shared_cut, []
            if (offset < share.split) == share.first:
                found = self._pieces.decode_in_place(buf, cut)
                if found is None:
                    raise TraceFormatError(f"malformed JSON in the event array near byte {offset}")
                events = found
            self.stats.bytes_decoded += cut
        if events:
            self.piece = piece
            yield events
        return cut

    def _shared_cut(self, buf: bytearray, piece_bytes: int) -> int | None:
        """The end of the next piece of a shared file, from the bytes alone (never from how
        they were read): the last boundary outside strings in the first `piece_bytes`, else in
        twice that, four times, ...; at the end of the stream, the last in what is left."""
        want = piece_bytes
        while len(buf) > want + 1:
            cut = _cut_outside_strings(buf, want + 1)
            if cut is not None:
                return cut
            want *= 2
        return _cut_outside_strings(buf, len(buf)) if self._eof else None

    def _read_block(self) -> bytes:
        try:
            block = self._stream.read(self._share.piece_bytes if self._share else BLOCK_BYTES)
        except (EOFError, zlib.error, OSError) as exc:
            # A .gz cut off mid-write: keep what was inflated, the tail decoder reports the loss.
            self.stats.truncated = True
            self.stats.notes.append(f"compressed stream ends early ({_short(exc)})")
            block = b""
        if not block:
            self._eof = True
        self._position += len(block)
        if self._on_block is not None:
            self._on_block()
        return block

    def _read_head(self) -> tuple[bytes, bool]:
        buf = b""
        while True:
            block = self._read_block()
            buf += block
            start = _LEADING_WHITESPACE.match(buf).end()  # type: ignore[union-attr]
            first = buf[start : start + 1]
            if first == b"[":
                return buf[start + 1 :], True
            if first and first != b"{":
                raise TraceFormatError("not JSON (expected an object or an array)")
            match = _EVENTS_KEY.search(buf)
            if match:
                self._decode_header(buf[: match.start()] + b'"traceEvents":[]}')
                return buf[match.end() :], False
            if self._eof or len(buf) > _HEAD_LIMIT_BYTES:
                if not buf.strip(_WHITESPACE):
                    raise TraceFormatError("empty file")
                raise TraceFormatError("JSON without a traceEvents array: not a PyTorch trace")

    def _decode_header(self, doc: bytes) -> None:
        repaired = _repair(doc)
        try:
            self.header = HEADER_DECODER.decode(repaired)
            return
        except msgspec.ValidationError:  # whole JSON: keep the keys of the expected types
            self.header, _ = convert_header(msgspec.json.decode(repaired))
        except (msgspec.DecodeError, UnicodeDecodeError):
            pass
        self.stats.notes.append("could not read the keys before traceEvents")

    def _decode_tail(self, buf: bytes, bare_array: bool) -> Iterator[list[Event]]:
        opener = b"[" if bare_array else b'{"traceEvents":['
        original = opener + buf
        for doc in (original, _repair(original)):
            try:
                events = self._decode_tail_doc(doc, bare_array)
            except (msgspec.DecodeError, UnicodeDecodeError):
                continue  # not whole JSON (ValidationError, its subclass, is handled inside)
            self.stats.bytes_decoded += len(buf)
            if doc is not original:
                self.stats.repaired_pieces += 1
            yield events
            return
        yield from self._salvage_truncated(buf)

    def _decode_tail_doc(self, doc: bytes, bare_array: bool) -> list[Event]:
        """The events of the document's end, typed at full speed; whole JSON with fields of
        odd types (an event's or a key's after the array) is read leniently instead, so that
        it is never taken for a file that ends early. Raises DecodeError when not whole."""
        try:
            if bare_array:
                return EVENT_LIST_DECODER.decode(doc)
            tail = TAIL_DECODER.decode(doc)
        except msgspec.ValidationError:
            pass
        else:
            self._merge_header(tail)
            return tail.traceEvents
        whole = msgspec.json.decode(doc)
        if isinstance(whole, dict):
            header, read = convert_header(whole)
            self._merge_header(header)
            if not read and _UNREAD_KEYS not in self.stats.notes:
                self.stats.notes.append(_UNREAD_KEYS)
            whole = whole.get("traceEvents", [])
        return self._pieces.convert_leniently(whole)

    def _salvage_truncated(self, buf: bytes) -> Iterator[list[Event]]:
        self.stats.truncated = True
        # The file may end right after a whole event (`}`, `},`, `}]`, `}]}`): try the last few
        # closing braces as the end of the array before falling back to the last boundary.
        end = len(buf)
        for _ in range(3):
            end = buf.rfind(b"}", 0, end)
            if end < 0:
                break
            whole = self._pieces.decode_piece(buf[: end + 1])
            if whole is not None:
                self.stats.bytes_decoded += end + 1
                self.stats.lost_bytes = len(buf[end + 1 :].strip(_WHITESPACE + b",]}"))
                yield whole
                return
        padded = bytearray(b"[") + buf
        cut = _last_boundary(padded, len(padded))
        decoded = None if cut is None else self._pieces.decode_before(padded, cut)
        if decoded is None:
            self.stats.lost_bytes = len(buf)
            return
        events, cut = decoded
        self.stats.lost_bytes = len(padded) - cut
        yield events

    def _merge_header(self, tail: TraceHeader) -> None:
        for name in TraceHeader.__struct_fields__:
            value = getattr(tail, name)
            if value is not None:
                setattr(self.header, name, value)


class PieceDecoder:
    """Decodes pieces of the event array (whole events separated by commas), repairing what
    real files get wrong; what it repaired or dropped goes into `stats`."""

    def __init__(self, stats: DecodeStats) -> None:
        self.stats = stats

    def decode_before(self, buf: bytearray, cut: int) -> tuple[list[Event], int] | None:
        """Decode the events in buf[1:cut] (buf[cut] is a separating comma), moving the cut back
        to an earlier boundary if it fell inside a string; None if no boundary is left."""
        exact = False
        while True:
            events = self.decode_in_place(buf, cut)
            if events is not None:
                self.stats.bytes_decoded += cut
                return events, cut
            if exact:
                break
            # Stop guessing: find the strings and take the last cut outside all of them.
            earlier = _boundary_outside_strings(buf, cut)
            if earlier is None:
                return None
            cut, exact = earlier, True
        raise TraceFormatError(
            f"malformed JSON in the event array near byte {self.stats.bytes_decoded}"
        )

    def decode_in_place(self, buf: bytearray, cut: int) -> list[Event] | None:
        buf[0], buf[cut] = 0x5B, 0x5D  # '[' ... ']'
        try:
            with memoryview(buf) as view:
                # Decoded from a copy: the operators' shapes (`msgspec.Raw`) point into what
                # they were decoded from, and `buf` is cut and refilled while the batch lives.
                # The copy costs ~8 ms on the 35 MB sample (`traces.shapes`).
                return EVENT_LIST_DECODER.decode(bytes(view[: cut + 1]))
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
            return self.decode_piece(bytes(buf[1:cut]))
        finally:
            buf[cut] = 0x2C  # ','

    def decode_piece(self, piece: bytes) -> list[Event] | None:
        doc = b"[" + piece + b"]"
        try:
            return EVENT_LIST_DECODER.decode(doc)
        except msgspec.ValidationError:
            return self._decode_leniently(doc)
        except (msgspec.DecodeError, UnicodeDecodeError):
            pass
        repaired = _repair(doc)
        if repaired == doc:
            return None
        events: list[Event] | None
        try:
            events = EVENT_LIST_DECODER.decode(repaired)
        except msgspec.ValidationError:
            events = self._decode_leniently(repaired)
        except (msgspec.DecodeError, UnicodeDecodeError):
            return None
        if events is not None:
            self.stats.repaired_pieces += 1
        return events

    def _decode_leniently(self, doc: bytes) -> list[Event] | None:
        """Valid JSON with an odd-typed field: keep every event that fits, count the rest."""
        try:
            raw = msgspec.json.decode(doc)
        except (msgspec.DecodeError, UnicodeDecodeError):
            return None
        return self.convert_leniently(raw)

    def convert_leniently(self, items: object) -> list[Event]:
        """The entries of an event array that are events (`lenient.convert_events`); the
        others counted in `stats` by the field of the wrong type."""
        events, fields = convert_events(items)
        add_counts(self.stats.malformed_fields, fields)
        self.stats.dropped_malformed += sum(fields.values())
        return events


def _last_boundary(buf: bytes | bytearray, end: int) -> int | None:
    """Index of the last comma before `end` that separates two events: `}` ws `,` ws `{`."""
    pos = end
    while True:
        pos = buf.rfind(b"{", 0, pos)
        if pos <= 0:
            return None
        comma = _skip_ws_back(buf, pos - 1)
        if comma >= 0 and buf[comma] == 0x2C:  # ','
            brace = _skip_ws_back(buf, comma - 1)
            if brace >= 0 and buf[brace] == 0x7D:  # '}'
                return comma


def _cut_outside_strings(buf: bytearray, end: int) -> int | None:
    """The last event boundary in buf[:end] that is certainly outside every JSON string.

    buf[1] starts outside any string, so a boundary is outside them exactly when an even number
    of unescaped quotes precede it; counting quotes runs at memory speed, unlike decoding."""
    cut = _last_boundary(buf, end)
    if cut is None or _even_quotes(buf, 1, cut):
        return cut
    return _boundary_outside_strings(buf, cut)


def _even_quotes(buf: bytes | bytearray, start: int, end: int) -> bool:
    """Whether buf[start:end] holds an even number of quotes that no backslash escapes.

    A quote after n backslashes is escaped when n is odd. Counting the quotes after at least
    1, 2, 3, ... backslashes and summing with alternating signs counts exactly those; a piece
    without a backslash (most) skips that."""
    import numpy as np  # only the shared readers get here, and they have numpy loaded

    with memoryview(buf) as view:
        quotes = int(np.count_nonzero(np.frombuffer(view[start:end], dtype=np.uint8) == 0x22))
    escaped, sign, pattern = 0, 1, b'\\"'
    if buf.find(b"\\", start, end) >= 0:
        while quotes and (found := buf.count(pattern, start, end)):
            escaped += sign * found
            sign, pattern = -sign, b"\\" + pattern
    return (quotes - escaped) % 2 == 0


_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
"""A JSON string. Possessive (runs of plain bytes taken whole, never given back), it finds
that a 300 KB string never closes in 2.5 ms, where one alternative per byte took 54 ms."""


def _boundary_outside_strings(buf: bytes | bytearray, end: int) -> int | None:
    """The last event boundary before `end` that no JSON string contains (slower, exact)."""
    spans = [m.span() for m in _STRING.finditer(buf, 1, end)]
    # A quote after the last whole string opens one that runs past `end`.
    open_quote = buf.find(b'"', spans[-1][1] if spans else 1, end)
    if open_quote >= 0:
        spans.append((open_quote, end))
    starts = [s for s, _ in spans]
    pos = end
    while (cut := _last_boundary(buf, pos)) is not None:
        index = bisect.bisect_right(starts, cut) - 1
        if index < 0 or spans[index][1] <= cut:
            return cut
        pos = spans[index][0]
    return None


def _skip_ws_back(buf: bytes | bytearray, index: int) -> int:
    while index >= 0 and buf[index] in _WHITESPACE:
        index -= 1
    return index


def _repair(doc: bytes) -> bytes:
    # The literals are looked for first: a search for bytes runs at memory speed, the
    # pattern's look-behind at every byte ~30x slower (a failed piece is repaired once a read).
    bad = any(literal in doc for literal in _BAD_LITERALS)
    repaired = _BAD_LITERAL.sub(rb"\1null", doc) if bad else doc
    try:
        repaired.decode("utf-8")
    except UnicodeDecodeError:
        repaired = repaired.decode("utf-8", "replace").encode("utf-8")
    return repaired


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:120]
