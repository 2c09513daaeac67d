"""The `code` route: a change only the user can make, written as a patch-like suggestion.

torchtop never edits a script. Where the fix was located in the user's code (`Fix.where`, from
the job's stacks: `advice/locate.py`), the patch names that file and line and shows the line as
it is written: rewritten where the change is a rewrite of it (`.item()` kept on the device, a
copy made `non_blocking`, the line wrapped in autocast), else as the place the added lines go
with. Where it could not be located the patch says so, and shows the lines to remove (`-`) and
to add (`+`) in a typical training loop, marked as such.
"""

from __future__ import annotations

import re

from torchtop.advice.locate import read_line
from torchtop.model.findings import Fix

_WHERE = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?:: (?P<text>.*))?$")
_ACCUMULATED_ITEM = re.compile(r"\+=.*\.item\(\)")
_TO_CALL = re.compile(r"\.to\(([^()]*)\)")
_DDP_CALL = re.compile(r"\b(DistributedDataParallel|DDP)\(")
_DDP_OPTION = re.compile(r"\bbucket_cap_mb\s*=\s*[^,()]+")
_AUTOCAST = 'with torch.autocast(device_type="cuda", dtype=torch.{dtype}):'

_AMP_BF16 = """\
-        loss = loss_fn(model(inputs), targets)
+        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
+            loss = loss_fn(model(inputs), targets)
         loss.backward()
         optimizer.step()"""

_AMP_FP16 = """\
+    scaler = torch.amp.GradScaler("cuda")
     for inputs, targets in loader:
-        loss = loss_fn(model(inputs), targets)
-        loss.backward()
-        optimizer.step()
+        with torch.autocast(device_type="cuda", dtype=torch.float16):
+            loss = loss_fn(model(inputs), targets)
+        scaler.scale(loss).backward()
+        scaler.step(optimizer)
+        scaler.update()"""

_TEMPLATES = {
    "code.torch_compile": """\
     model = Net().to(device)
+    model = torch.compile(model)""",
    "code.cuda_graphs": """\
     model = Net().to(device)
+    model = torch.compile(model, mode="reduce-overhead")""",
    "code.non_blocking_copy": """\
-        inputs, targets = inputs.to(device), targets.to(device)
+        inputs = inputs.to(device, non_blocking=True)
+        targets = targets.to(device, non_blocking=True)""",
    "code.use_ddp": """\
-    model = torch.nn.DataParallel(model)
+    torch.distributed.init_process_group("nccl")
+    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
+    model = torch.nn.parallel.DistributedDataParallel(model.cuda())
 # run with: torchrun --nproc_per_node=NUM_GPUS train.py""",
    "code.avoid_item": """\
-        total_loss += loss.item()
+        total_loss += loss.detach()          # stays on the device: no sync
+        if step % 100 == 0:
+            print(total_loss.item() / 100)   # one sync every 100 steps""",
    "code.gradient_accumulation": """\
-        loss.backward()
-        optimizer.step()
+        context = model.no_sync() if (step + 1) % accumulate else contextlib.nullcontext()
+        with context:
+            (loss / accumulate).backward()
+        if (step + 1) % accumulate == 0:
+            optimizer.step()
+            optimizer.zero_grad()""",
    "code.ddp_comm_hook": """\
     model = DistributedDataParallel(model)
+    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
+    {value}""",
    "code.activation_checkpointing": """\
-        x = block(x)
+        x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)""",
    "ddp.bucket_cap_mb": """\
-    model = DistributedDataParallel(model)
+    model = DistributedDataParallel(model, bucket_cap_mb={value})""",
    "dist.backend": """\
-    torch.distributed.init_process_group("gloo")
+    torch.distributed.init_process_group("{value}")""",
}


def code_patch(fix: Fix) -> str:
    """A header naming the change, then the patch-like lines at the user's line where it was
    located, else in a typical loop (and why it was not located)."""
    header = f"# {fix.knob}: {fix.description} (a change to your script; torchtop never applies it)"
    located = _located(fix.where)
    if located is None:
        reason = fix.where or "could not locate the line: no Python stacks of the job were recorded"
        return f"{header}\n# {reason}; in a typical training loop:\n{_body(fix)}\n"
    file, line, text = located
    shown = (
        "that built DistributedDataParallel"
        if fix.knob.startswith("ddp.")
        else "the job's stacks show"
    )
    at = f"# at {file}:{line}, the line {shown}"
    if text is None:
        return f"{header}\n{at} (the file is not readable here):\n{_added(fix)}\n"
    return f"{header}\n{at}:\n{_at_line(fix, text)}\n"


def _located(where: str | None) -> tuple[str, int, str | None] | None:
    """The file, line and source line of a located fix (read again where the file is here, so
    the indentation is the file's own)."""
    match = _WHERE.match(where or "")
    if match is None:
        return None
    file, line = match["file"], int(match["line"])
    return file, line, read_line(file, line) or match["text"]


def _at_line(fix: Fix, text: str) -> str:
    """The change at the user's line: the line rewritten, or wrapped, or kept as the place."""
    indent = text[: len(text) - len(text.lstrip())]
    if fix.knob == "code.avoid_item" and _ACCUMULATED_ITEM.search(text):
        kept = text.replace(".item()", ".detach()")
        return f"-{text}\n+{kept}  # stays on the device: read it back every N steps"
    if fix.knob == "code.avoid_item":
        every = f"+{indent}if step % 100 == 0:  # read back once every 100 steps"
        return f"-{text}\n{every}\n+    {text}"
    if fix.knob == "code.non_blocking_copy" and "non_blocking" not in text:
        rewritten = _TO_CALL.sub(r".to(\1, non_blocking=True)", text)
        rewritten = rewritten.replace(".cuda()", ".cuda(non_blocking=True)")
        return f"-{text}\n+{rewritten}"
    if fix.knob == "ddp.bucket_cap_mb" and _DDP_CALL.search(text) and text.rstrip().endswith(")"):
        return f"-{text}\n+{_with_bucket_cap(text, fix.value)}"
    if fix.knob == "amp.dtype":
        dtype = "float16" if str(fix.value) in ("float16", "half") else "bfloat16"
        autocast = _AUTOCAST.format(dtype=dtype)
        wrapped = f"+{indent}{autocast}  # around forward and loss\n+    {text}"
        scaler = "\n# with float16: scaler = torch.amp.GradScaler(); scaler.scale(loss).backward()"
        return f"-{text}\n{wrapped}" + (scaler if dtype == "float16" else "")
    return f" {text}\n{_added(fix)}"


def _with_bucket_cap(text: str, value: object) -> str:
    """The `DistributedDataParallel(...)` line with `bucket_cap_mb` set to `value`."""
    option = f"bucket_cap_mb={value}"
    if _DDP_OPTION.search(text):
        return _DDP_OPTION.sub(option, text)
    body = text.rstrip()
    return f"{body[:-1]}, {option})"


def _added(fix: Fix) -> str:
    """The lines a fix adds, from its template's `+` lines or its value, said to go with the
    located line (once, before the loop, for a change to the model)."""
    template = _TEMPLATES.get(fix.knob, "").replace("{value}", str(fix.value))
    added = [line for line in template.splitlines() if line.startswith("+")]
    added = added or [f"+    {line}" for line in str(fix.value).splitlines()]
    return "\n".join(added) + "\n# (with the line above: before the loop for a change to the model)"


def _body(fix: Fix) -> str:
    if fix.knob == "amp.dtype":
        return _AMP_FP16 if str(fix.value) in ("float16", "half") else _AMP_BF16
    template = _TEMPLATES.get(fix.knob)
    if template is not None:
        return template.replace("{value}", str(fix.value))
    return "\n".join(f"+    {line}" for line in str(fix.value).splitlines())
