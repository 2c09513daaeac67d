"""torchtop: top for PyTorch training. Where each step's time goes, the bottleneck, the fix.

`torchtop.step()` and `with torchtop.step_context():` mark steps for loops without an
optimizer; they do nothing unless the job runs under `torchtop run`. Importing torchtop never
imports torch.
"""

from torchtop.agent.api import step, step_context

__version__ = "0.1.0"
__all__ = ["__version__", "step", "step_context"]
