"""Live assessment: a run folder's state (and its newest profiler windows) made into a report.

Pure: no process is started, stopped or sampled here. `live/` (the tick loop), `sessions/offline.py`
(a recorded run, `recorded.analyze_run`), `tuning/` and the dashboard all use it from
above.
"""
