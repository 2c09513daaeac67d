"""The live and offline dashboard (Textual): the one package that imports textual.

`app.run_live(monitor)` watches a running job, `app.run_view(report)` shows saved traces or a
recorded run. Everything below `app` that has no widget in it (frames, ranking, the exact change
of a fix, hot stacks, the bounded timeline) is plain Python, so it is tested without a terminal.
"""
