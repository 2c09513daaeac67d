"""Read a gzip file as one stream that, when cut off, ends early instead of losing data.

`gzip.GzipFile.read(n)` raises EOFError on a truncated file and drops everything it inflated
during that call, up to n bytes. Inflating with `zlib.decompressobj` keeps every byte that was
whole; `truncated` says the stream ended before the gzip trailer. Concatenated members (what
`cat a.gz b.gz` makes) are read in turn, as gzip does.
"""

from __future__ import annotations

import zlib
from typing import BinaryIO

_GZIP_WBITS = 16 + zlib.MAX_WBITS
_RAW_BLOCK = 1 << 18


class InflatingReader:
    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.inflater = zlib.decompressobj(_GZIP_WBITS)
        self.truncated = False
        self.finished = False

    def read(self, size: int) -> bytes:
        parts: list[bytes] = []
        produced = 0
        while produced < size and not self.finished:
            chunk = self.raw.read(_RAW_BLOCK)
            if not chunk:
                self.finished = True
                self.truncated = not self.inflater.eof
                break
            data = self.inflater.decompress(chunk)
            while self.inflater.eof and self.inflater.unused_data:
                rest = self.inflater.unused_data
                self.inflater = zlib.decompressobj(_GZIP_WBITS)
                data += self.inflater.decompress(rest)
            parts.append(data)
            produced += len(data)
        return b"".join(parts)
