"""Each tick of the live view published outside: Prometheus (`--metrics`) and TensorBoard.

- `metrics`: a tick's snapshot as Prometheus metric families; `metrics_server` serves them.
- `tensorboard`: a tick's news as TensorBoard scalars and profiler links; `tb_events` writes
  the event files by hand (TFRecord framing, no TensorFlow).
"""
