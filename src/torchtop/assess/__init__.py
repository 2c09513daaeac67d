"""Live assessment: a run folder's state (and its newest profiler windows) made into a report.

Pure: no process is started, stopped or sampled here. `live/` (the tick loop), `offline.py`
(a recorded run) and the dashboard all use it from above.
"""
