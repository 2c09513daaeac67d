"""`torchtop demo`: a small real CPU training job with a planted bottleneck."""
