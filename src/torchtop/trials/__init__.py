"""The A/B protocol: a fix measured against the job as it runs, kept or reverted, then held.

- `measure`: one launch, timed over its steady-state steps (`warmup` says where warm-up ends).
- `trial`: `run_trial(before, after, ...)`, both variants measured alike in rounds; `stats`
  (the rounds' ratios, Student's t) and `decision` (keep, revert, another round) judge them;
  `handle`: how the caller cancels a trial.
- `holding` and `tracked`: after a kept fix, the relaunched job's steps held against the
  trial, and the fix taken back when it stops paying.
"""
