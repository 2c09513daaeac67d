"""torchtop: top for PyTorch training. Where each step's time goes, the bottleneck, the fix."""

__version__ = "0.1.0"
