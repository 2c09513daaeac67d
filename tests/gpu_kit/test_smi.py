"""nvidia-smi's query output, parsed and averaged as the kit compares it with torchtop's NVML."""

from __future__ import annotations

import sys
import time

from smi import Reading, SmiSampler, parse_line, parse_output, window_means

# What `nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms
# 500` prints (written by hand in its documented format: no GPU has been lent here yet),
# with the fields it writes when a counter is missing and an error line.
RECORDED = """\
0, 0
97, 40321
100, 40321
[N/A], 40321
98, [Not Supported]
Failed to initialize NVML: Unknown Error
"""


def test_a_query_output_parses_to_percent_and_mib_with_missing_fields_as_none() -> None:
    readings = parse_output(RECORDED, start_t=100.0)
    assert [(r.utilization_pct, r.memory_used_mib) for r in readings] == [
        (0.0, 0.0), (97.0, 40321.0), (100.0, 40321.0), (None, 40321.0), (98.0, None),
    ]  # fmt: skip
    assert [r.t for r in readings] == [100.0, 100.5, 101.0, 101.5, 102.0]


def test_lines_of_another_shape_are_not_readings() -> None:
    assert parse_line("Failed to initialize NVML: Unknown Error", 1.0) is None
    assert parse_line("utilization.gpu [%], memory.used [MiB]", 1.0) is None
    assert parse_line("1, 2, 3", 1.0) is None


def test_window_means_average_only_the_readings_inside_the_window() -> None:
    readings = [
        Reading(t, u, m) for t, u, m in [(1, 0, 10), (2, 50, 20), (3, None, 30), (9, 100, 90)]
    ]
    assert window_means(readings, 2, 3) == (50.0, 25.0, 2)
    assert window_means(readings, 20, 30) == (None, None, 0)


def test_the_sampler_stamps_each_line_a_real_process_prints_and_stops_it() -> None:
    script = "import time\nfor u in (40, 60):\n    print(f'{u}, 1024', flush=True)\ntime.sleep(60)"
    sampler = SmiSampler([sys.executable, "-c", script]).start()
    deadline = time.monotonic() + 20
    while len(sampler.readings) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    sampler.stop()
    assert [r.utilization_pct for r in sampler.readings] == [40.0, 60.0]
    assert sampler.error is None and sampler.readings[0].t <= sampler.readings[1].t


def test_a_machine_without_nvidia_smi_is_an_error_line_not_an_exception() -> None:
    sampler = SmiSampler(["/nonexistent/nvidia-smi"]).start()
    sampler.stop()
    assert (
        sampler.readings == [] and sampler.error is not None and "could not start" in sampler.error
    )
