"""A process's memory over the whole run, from its step records: the highest RSS and CUDA
peak, the step each fell in, and the newest figures. The steps themselves are kept only for
the newest `MAX_STEPS` (the curve); this keeps what the whole run's figures need, in O(1)."""

from __future__ import annotations

from dataclasses import dataclass

from torchtop.runs.records import Step


@dataclass
class MemoryTally:
    rss_peak_bytes: int | None = None
    rss_peak_step: int | None = None
    rss_last_bytes: int | None = None
    cuda_device: int | None = None
    capacity_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    peak_step: int | None = None
    peak_reserved_bytes: int | None = None
    persistent_bytes: int | None = None
    """Allocated when the peak's step began (the previous step's end; the peak step's own end
    for the first step): weights, gradients and optimizer state, which a larger batch keeps."""
    last_peak_bytes: int | None = None
    """The newest step's CUDA peak: the last one measured before the process ended."""
    _allocated_before: int | None = None

    def add(self, record: Step) -> None:
        rss = record.rss_bytes
        if isinstance(rss, int):
            self.rss_last_bytes = rss
            if self.rss_peak_bytes is None or rss > self.rss_peak_bytes:
                self.rss_peak_bytes, self.rss_peak_step = rss, record.step
        if isinstance(record.cuda_capacity_bytes, int):
            self.capacity_bytes = record.cuda_capacity_bytes
        peak = record.cuda_peak_allocated_bytes
        if isinstance(peak, int):
            self._add_cuda(record, peak)

    def _add_cuda(self, record: Step, peak: int) -> None:
        allocated = record.cuda_allocated_bytes
        now = allocated if isinstance(allocated, int) else None
        if isinstance(record.cuda_device, int):
            self.cuda_device = record.cuda_device
        self.last_peak_bytes = peak
        if self.peak_allocated_bytes is None or peak > self.peak_allocated_bytes:
            self.peak_allocated_bytes, self.peak_step = peak, record.step
            self.persistent_bytes = self._allocated_before if self._allocated_before else now
        reserved = record.cuda_reserved_bytes
        if isinstance(reserved, int) and reserved > (self.peak_reserved_bytes or 0):
            self.peak_reserved_bytes = reserved
        self._allocated_before = now
