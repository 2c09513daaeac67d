"""The `code` route: a change only the user can make, written as a patch-like suggestion.

torchtop never edits a script. For each code knob it knows, it shows the lines to remove (`-`)
and to add (`+`) in a typical training loop, so the change is concrete enough to copy; a knob
it has no template for shows the rule's own value as the line to add.
"""

from __future__ import annotations

from torchtop.model.findings import Fix

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
+    model.register_comm_hook(None, default_hooks.bf16_compress_hook)""",
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
    """A header naming the change, then the patch-like lines."""
    header = f"# {fix.knob}: {fix.description} (a change to your script; torchtop never applies it)"
    return f"{header}\n{_body(fix)}\n"


def _body(fix: Fix) -> str:
    if fix.knob == "amp.dtype":
        return _AMP_FP16 if str(fix.value) in ("float16", "half") else _AMP_BF16
    template = _TEMPLATES.get(fix.knob)
    if template is not None:
        return template.replace("{value}", str(fix.value))
    return "\n".join(f"+    {line}" for line in str(fix.value).splitlines())
