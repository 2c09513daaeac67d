"""TensorBoard event files written by hand: TFRecord framing around `Event` protobufs.

TensorBoard reads `events.out.tfevents.*` files: records framed as TFRecord (a little-endian
uint64 length, its masked CRC-32C, the bytes, their masked CRC-32C), each an `Event` message
(`tensorflow/core/util/event.proto`). The few messages torchtop writes (a scalar, a text) are
encoded here field by field: tensorboardX or TensorFlow would bring protobuf and numpy (or
torch) into the launcher for a hundred lines of bytes, and the launcher must stay light. The
CRC is computed from a table in Python: records are tens of bytes, a tick writes a few hundred.

Every write is flushed, so a TensorBoard open beside the job sees each tick as it lands.
"""

from __future__ import annotations

import functools
import os
import socket
import struct
import time
from pathlib import Path
from typing import BinaryIO

FILE_VERSION = "brain.Event:2"
"""Version 2: TensorBoard drops data only on an explicit restart marker, never because a
step went back (we keep steps increasing anyway, `exporters.tensorboard`)."""

_CRC_TABLE: list[int] = []
for _byte in range(256):
    _crc = _byte
    for _ in range(8):
        _crc = (_crc >> 1) ^ 0x82F63B78 if _crc & 1 else _crc >> 1
    _CRC_TABLE.append(_crc)


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum TFRecord uses."""
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    """One TFRecord: length, its masked CRC, the record, its masked CRC."""
    length = struct.pack("<Q", len(record))
    return (
        length
        + struct.pack("<I", masked_crc(length))
        + record
        + struct.pack("<I", masked_crc(record))
    )


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s are ten bytes of two's complement
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _bytes_field(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def scalar_value(tag: str, value: float) -> bytes:
    """A `Summary.Value` with `simple_value`, as `tf.summary.scalar`'s v1 form writes it."""
    return _scalar_head(tag) + struct.pack("<f", value)


@functools.lru_cache(maxsize=256)
def _scalar_head(tag: str) -> bytes:
    # A tick writes the same few tags for every step: their bytes are encoded once.
    return _bytes_field(1, tag.encode()) + _key(2, 5)


def text_value(tag: str, text: str) -> bytes:
    """A `Summary.Value` the text plugin shows: a string tensor tagged with plugin `text`."""
    plugin_data = _bytes_field(1, b"text")
    metadata = _bytes_field(1, plugin_data)
    dt_string = 7
    tensor = _key(1, 0) + _varint(dt_string) + _bytes_field(2, b"") + _bytes_field(8, text.encode())
    return _bytes_field(1, tag.encode()) + _bytes_field(9, metadata) + _bytes_field(8, tensor)


def event(wall_time_s: float, step: int, values: list[bytes]) -> bytes:
    """An `Event` carrying a `Summary` of `values`."""
    summary = b"".join(_bytes_field(1, v) for v in values)
    return _head(wall_time_s, step) + _bytes_field(5, summary)


def version_event(wall_time_s: float) -> bytes:
    return _head(wall_time_s, 0) + _bytes_field(3, FILE_VERSION.encode())


def _head(wall_time_s: float, step: int) -> bytes:
    return _key(1, 1) + struct.pack("<d", wall_time_s) + _key(2, 0) + _varint(step)


class EventFile:
    """One `events.out.tfevents.*` file of one TensorBoard run (a folder), opened on first use."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._file: BinaryIO | None = None

    def write(self, wall_time_s: float, step: int, values: list[bytes]) -> None:
        if not values:
            return
        target = self._open()
        target.write(frame(event(wall_time_s, step, values)))

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _open(self) -> BinaryIO:
        if self._file is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            now_s = time.time()
            name = f"events.out.tfevents.{int(now_s)}.{socket.gethostname()}.{os.getpid()}.0"
            self._file = (self.folder / name).open("ab")
            self._file.write(frame(version_event(now_s)))
        return self._file
