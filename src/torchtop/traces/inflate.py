"""Read a gzip file as one stream that, when cut off, ends early instead of losing data.

`gzip.GzipFile.read(n)` raises EOFError on a truncated file and drops everything it inflated
during that call, up to n bytes. Inflating with `zlib.decompressobj` keeps every byte that was
whole; `truncated` says the stream ended before the gzip trailer. Concatenated members (what
`cat a.gz b.gz` makes) are read in turn, as gzip does.

Inflation runs in a pump thread a few blocks ahead of the reader: zlib releases the GIL while it
works, so on two cores inflating the next block overlaps decoding the current one.
"""

from __future__ import annotations

import queue
import threading
import zlib
from typing import BinaryIO

_GZIP_WBITS = 16 + zlib.MAX_WBITS
_RAW_BLOCK = 1 << 16
_AHEAD_BLOCKS = 64


class InflatingReader:
    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.truncated = False
        self._blocks: queue.Queue[bytes | BaseException | None] = queue.Queue(_AHEAD_BLOCKS)
        self._finished = False
        self._stop = threading.Event()
        self._pump = threading.Thread(
            target=self._inflate_all, name="torchtop-inflate", daemon=True
        )
        self._pump.start()

    def read(self, size: int = -1) -> bytes:
        """The next inflated block (its size is the pump's, not `size`); b"" at the end.

        Like a raw file's read, it may return less than asked: the caller only appends."""
        while not self._finished:
            block = self._blocks.get()
            if block is None:
                self._finished = True
            elif isinstance(block, BaseException):
                self._finished = True
                raise block
            elif block:
                return block
        return b""

    def close(self) -> None:
        self._stop.set()
        while self._pump.is_alive():
            try:
                self._blocks.get_nowait()
            except queue.Empty:
                self._pump.join(timeout=0.05)

    def _inflate_all(self) -> None:
        inflater = zlib.decompressobj(_GZIP_WBITS)
        try:
            while not self._stop.is_set():
                chunk = self.raw.read(_RAW_BLOCK)
                if not chunk:
                    self.truncated = not inflater.eof
                    break
                data = inflater.decompress(chunk)
                while inflater.eof and inflater.unused_data:
                    rest = inflater.unused_data
                    inflater = zlib.decompressobj(_GZIP_WBITS)
                    data += inflater.decompress(rest)
                self._put(data)
        except (zlib.error, OSError) as exc:
            self._put(exc)
            return
        self._put(None)

    def _put(self, item: bytes | BaseException | None) -> None:
        while not self._stop.is_set():
            try:
                self._blocks.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
