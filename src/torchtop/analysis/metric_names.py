"""Every metric a rule may name, with its meaning and unit: the vocabulary of `rules/`.

Rule files are checked against this list when loaded, so a misspelt metric is an error, not a
rule that silently never fires. Metrics that only the live agent can measure (the job's own
settings) are listed too; offline they are None and rules that need them stay quiet.
"""

from __future__ import annotations

CLASSES = ("dataloader", "memcpy", "cpu", "gpu", "communication")

_SHARE = "share of step time (0-1), counted as torch-tb-profiler counts it"

METRICS: dict[str, str] = {
    # The step-time breakdown.
    "kernel_share": f"GPU kernels (not collectives): {_SHARE}",
    "memcpy_share": f"device memcpy (on a CPU-only trace: copy-like operators): {_SHARE}",
    "memset_share": f"device memset: {_SHARE}",
    "communication_share": f"collectives not hidden behind kernels or copies: {_SHARE}",
    "runtime_share": f"CUDA/HIP runtime calls while the device is idle: {_SHARE}",
    "dataloader_share": f"waiting for the DataLoader's next batch: {_SHARE}",
    "cpu_exec_share": f"other CPU operators while the device is idle: {_SHARE}",
    "other_share": f"no recorded activity (Python between ops, untraced work): {_SHARE}",
    # Steps.
    "steps_count": "steps analysed",
    "step_mean_ms": "mean step time, ms",
    "step_p50_ms": "median step time, ms",
    "step_p95_ms": "95th percentile step time, ms",
    "step_cv": "step time standard deviation over its mean",
    "has_step_markers": "the trace has ProfilerStep#N markers (else it is one step)",
    "trace_truncated": "the trace file was cut off; only its whole events were analysed",
    "trace_set_aside_share": "events set aside in reading (wrong type, impossible time) over "
    "those read (0-1)",
    # The device.
    "has_gpu": "the trace shows GPU activity",
    "gpu_utilization": "kernel busy time over the steps' span (0-1), averaged over GPUs",
    "gpu_idle_share": "1 - gpu_utilization",
    "gpu_count": "GPUs that ran kernels in this trace",
    "kernels_per_step": "kernels launched per step",
    "kernel_median_us": "median kernel duration, µs",
    "tiny_kernel_fraction": "fraction of kernels shorter than 10 µs",
    "launch_delay_median_us": "median time from launch call to kernel start, µs (small = the "
    "GPU waits for launches; large = the CPU runs ahead)",
    "gpu_gaps_per_step": "idle gaps between kernels per step",
    # Why the GPU idles (`analysis.idle`, counted as Holistic Trace Analysis counts it): each
    # gap with no kernel, copy or memset on the device, by what the work ending it waited for.
    "idle_host_wait_share": "GPU idle because the host launched the next work only after the "
    "device had drained (launch gaps, Python, syncs): share of the steps' span (0-1)",
    "idle_kernel_wait_share": "GPU idle in gaps under 30 µs before work already queued (launch "
    "latency between back-to-back kernels): share of the steps' span (0-1)",
    "idle_other_share": "GPU idle with the next work queued but held back (waiting on another "
    "stream's event, a collective): share of the steps' span (0-1)",
    "tc_used_share": "kernel time in Tensor Core (or AMD matrix-core) kernels over all kernel "
    "time (0-1)",
    "tc_eligible_share": "kernel time launched by Tensor-Core-eligible operators over all kernel "
    "time (0-1)",
    "compute_capability": "the GPU's compute capability, e.g. 8.0 (ROCm: the gfx major.minor, "
    "9.4 for an MI300)",
    "matrix_cores": "the GPU has Tensor Cores (NVIDIA 7.0+) or MFMA matrix cores (AMD Instinct "
    "MI100+); None where the name does not say",
    # Kernel patterns a known change removes (`analysis.gpu_patterns`, `kernel_sequences`).
    "attention_unfused_share": "kernels launched between the batched matmuls around a softmax "
    "(attention computed by hand): share of step time",
    "attention_fusion_share": "of those, the kernels other than the two products, which a fused "
    "attention kernel does not run: share of step time",
    "attention_roofline_share": "the unfused attention's kernel time beyond its products' FLOPs "
    "at the device's peak (the most a fused kernel could save): share of step time",
    "optimizer_kernels_per_step": "kernels launched inside `Optimizer.step` per step",
    "optimizer_multi_tensor_fraction": "of those, the fraction that update many tensors at once "
    "(multi_tensor_apply, fused optimizers)",
    "optimizer_kernel_share": "kernel time launched inside `Optimizer.step`: share of step time",
    "optimizer_wait_share": "device idle time between the first and last optimizer kernel of each "
    "step: share of step time",
    "conv_tc_share": "Tensor Core (matrix-core) kernel time launched by convolutions: share of "
    "step time",
    "conv_transpose_share": "NCHW/NHWC layout transposes launched by convolutions (cuDNN "
    "nchwToNhwc, MIOpen batched_transpose): share of step time",
    "elementwise_chain_share": "runs of 3 or more elementwise kernels back to back on a device: "
    "share of step time",
    "elementwise_chains_per_step": "such runs per step",
    "elementwise_fusion_share": "those runs' time but for the longest kernel of each (what one "
    "fused pass saves): share of step time",
    "fusion_top_per_step": "repeats per step of the kernel sequence whose fusion saves the most",
    "fusion_top_share": "the time fusing that sequence saves (its memory-bound kernels' time, but "
    "for the longest where no GEMM or convolution takes them in): share of step time",
    "fusion_candidates": "the top kernel sequences to fuse, each with its repeats per step and "
    "saved share",
    "amp_peak_ratio": "the GPU's dense float32 peak over its bfloat16 (compute capability 8.0 "
    "and later) or float16 Tensor Core peak, from the datasheet table",
    "gemm_share": "kernel time launched by GEMM operators (mm, addmm, bmm, baddbmm, "
    "_scaled_mm) with recorded shapes: share of step time",
    "small_gemm_share": "of that, the GEMMs whose output, in 64x64 tiles, would not fill the "
    "device's SMs even at twice its rows: share of step time",
    "small_gemm_fill": "those small GEMMs' median output tiles over the device's SMs",
    "memory_peak_bytes": "peak device memory allocated, bytes",
    "memory_peak_share": "peak device memory allocated over the device's capacity (0-1)",
    "memory_batch_factor_max": "the largest multiple of the current batch predicted to fit in "
    "device memory (activations grow with the batch; weights and optimizer state do not)",
    "rss_peak_bytes": "the training process's highest resident set at a step end (live), bytes",
    # The long run (`assess.long_run`): over every step, not the newest windows.
    "rss_growth_bytes_per_step": "steady growth of the host RSS over the run (Theil-Sen "
    "slope over step numbers, `analysis.growth`), bytes a step; None where it does not grow",
    "rss_growth_bytes_per_hour": "the same at the run's step rate, bytes an hour",
    "rss_growth_seconds_to_limit": "seconds until the host RSS reaches the nearest known "
    "limit at this rate; None where no limit is known",
    "rss_growth_rank": "the process whose host RSS grows fastest",
    "rss_growth_first_step": "the first step of the growing series",
    "rss_growth_last_step": "the last step of the growing series",
    "rss_growth_rate": "the growth in words: per step, per hour, time to the limit",
    "rss_growth_where": "the job's line most stacks sampled while it grew were in",
    "cuda_growth_bytes_per_step": "steady growth of the device allocated memory (Theil-Sen "
    "slope over step numbers, `analysis.growth`), bytes a step; None where it does not grow",
    "cuda_growth_bytes_per_hour": "the same at the run's step rate, bytes an hour",
    "cuda_growth_seconds_to_limit": "seconds until it fills the device's capacity at this rate; "
    "None where the capacity is not known",
    "cuda_growth_rank": "the process whose device allocated memory grows fastest",
    "cuda_growth_first_step": "the first step of the growing series",
    "cuda_growth_last_step": "the last step of the growing series",
    "cuda_growth_rate": "the growth in words: per step, per hour, time to the limit",
    "cuda_growth_where": "the job's line most stacks sampled while it grew were in",
    "cuda_fragmentation_bytes": "device memory the caching allocator reserves above the step's "
    "peak allocated (median over the newest quarter of the run), bytes",
    "cuda_fragmentation_share": "that over the memory reserved (0-1)",
    "stall_period_steps": "steps between stalls that recur on a schedule (`analysis.stalls`); "
    "None where no slow steps recur",
    "stall_period_s": "seconds between those stalls (median)",
    "stall_count": "stalls (one that spills into the next step counted once)",
    "stall_cost_s": "the time a stall adds to its step (mean), seconds",
    "stall_share_lost": "the stalls' added time over the run's step time (0-1)",
    "stall_typical_step_s": "the median step's wall time, seconds",
    "stall_samples": "main-thread stacks sampled during the stalls",
    "stall_where": "the job's line most stacks sampled during the stalls were in",
    "stall_in_checkpoint": "the stalls' stacks save a checkpoint (torch.save, a save function)",
    "stall_in_evaluation": "the stalls' stacks run an evaluation",
    "stall_in_dataloader": "the stalls' stacks start a DataLoader's iterator (its workers)",
    "stall_in_logging": "the stalls' stacks log (logging, print, TensorBoard, wandb)",
    "drift_fall_share": "how far steps/s fell from the first third of the run to the last "
    "(0-1, `analysis.drift`); None where it held its speed",
    "drift_early_steps_per_s": "steps/s over the first third of the run (bucket medians)",
    "drift_late_steps_per_s": "steps/s over the last third of the run (bucket medians)",
    "drift_since_step": "the first step of the first bucket under the midpoint of the two rates",
    "drift_with": "what the host and GPU samples show changed with it (SM clock, temperature, "
    "other processes' CPU, resident set), in words",
    # Copies.
    "htod_bytes_per_step": "host-to-device bytes copied per step",
    "htod_gb_per_s": "achieved host-to-device bandwidth, GB/s",
    "pageable_copy_fraction": "copy time from or to pageable host memory over all copy time (0-1)",
    "pageable_htod_per_step": "host-to-device copies from pageable memory per step",
    "copy_time_share": "all memcpy time (overlapped or not) over step time",
    # Host.
    "syncs_per_step": "host synchronisations per step (synchronize calls, .item())",
    "sync_share": "time the host spends in synchronisations: share of step time",
    "copy_op_share": "copy-like operators (copy_, to, contiguous, clone) on the host: share of "
    "step time",
    "op_share": "any CPU operator running, on any thread: share of step time",
    "main_thread_op_share": "operators running on the training loop's thread: share of step time",
    "threads_with_ops": "threads that recorded operators",
    # Distribution.
    "uses_dp": "torch.nn.DataParallel is in use",
    "uses_ddp": "DistributedDataParallel is in use",
    "uses_nccl": "NCCL collectives are in use",
    "uses_gloo": "gloo collectives are in use",
    "world_size": "processes in the job",
    "comm_overlap_fraction": "communication time that overlaps compute (0-1)",
    "comm_raw_share": "all communication time, hidden or not: share of step time",
    "comm_time_ms": "collective time per step, ms: device kernels (GPU) or host ranges (CPU job)",
    "comm_hidden_ms": "collective time per step that other work (compute, copies) ran beside, ms",
    "comm_exposed_ms": "collective time per step with nothing else running, ms",
    "comm_exposed_share": "collective time with nothing else running: share of step time",
    "allreduce_exposed_ms": "all-reduce time per step with nothing else running, ms",
    "allreduce_exposed_share": "all-reduce time with nothing else running: share of step time",
    "backward_compute_ms": "backward work per step (launched from the step's first backward "
    "operator on) that no all-reduce overlaps, ms",
    "allreduce_exposed_vs_backward": "exposed all-reduce over that backward compute: below 1 "
    "better overlap could hide it, above 1 no overlap can",
    "allreduce_calls_per_step": "all-reduce calls per step",
    "allreduce_median_message_bytes": "median all-reduce message, bytes (the larger of a call's "
    "input and output buffers)",
    "allreduce_busbw_gbps": "all-reduce bus bandwidth, GB/s (NCCL-tests' busbw)",
    "ranks_count": "ranks analysed together",
    "rank_step_spread": "(slowest - fastest) / median of the ranks' mean step times",
    "slowest_rank": "label of the rank with the longest mean step",
    # The straggler (`assess.straggler_metrics`): live, the judgement over every counted step
    # in blocks (`assess.stragglers`); offline, the profiled steps' mean step times.
    "straggler_named": "whether a rank is named the straggler (live: the judgement; offline: "
    "rank_step_spread and the straggler's waited share past `[ranks]`' thresholds)",
    "straggler_rank": "label of the rank named the straggler",
    "straggler_slower_by": "the straggler's busy time (live) or mean step time (offline) over "
    "its peers' median, minus 1",
    "straggler_waited_share": "the share of each step its peers wait on the straggler (live: "
    "its excess busy time over its step wall; offline: its excess mean step over its mean step)",
    "straggler_blocks": "blocks of 10 steps in which the straggler was the slowest (live)",
    "straggler_blocks_judged": "blocks of 10 steps the ranks were compared over (live)",
    "straggler_blocks_share": "straggler_blocks / straggler_blocks_judged (live)",
    "straggler_first_step": "the first step number compared (live)",
    "straggler_last_step": "the last step number compared (live)",
    "straggler_persistence": "in words: what the margin is of, and how persistent it is",
    # The job's settings, measured by the live agent (None offline).
    "host_cpu_count": "CPU cores the job may use",
    "torch_num_threads": "torch.get_num_threads() in the job",
    "local_ranks": "the job's ranks (training processes) on the node, each with its own threads",
    "rank_cores": "the cores one rank may count on: its node's cores shared among the local ranks, "
    "or fewer where its launcher confined it",
    "loader_workers": "DataLoader worker processes of a rank: 0 where the agent saw the job step "
    "with no DataLoader (None offline)",
    "loader_cpu_share": "the fraction of the data loading's time that is CPU work (0-1): the "
    "stepping thread's CPU time inside DataLoader.__next__ over its wait (num_workers=0), or "
    "each worker's busy fraction of a core (with workers); the rest waits on storage or the "
    "network (None offline)",
    "loader_wait_share": "the DataLoader wait's share of the recent steps as the agent timed "
    "them (dataloader_share comes from a profiler window once there is one, whose profiler "
    "slows the compute); None offline",
    "other_cores_used": "cores used by processes outside the job on its node (not torchtop's "
    "own), averaged over the newest host samples (None offline)",
    "contender_cores": "cores used by the contenders: processes outside the job busy through "
    "most of the newest host samples (None offline)",
    "contenders": "the contenders named: pid, command and cores of each ('none' where no "
    "process outside the job stayed busy)",
    "runqueue_wait_share": "time the job's threads waited on a CPU run queue, as a share of the "
    "time they were ready to run (their CPU time plus that wait; /proc schedstat): about the "
    "share of its CPU work's time lost to a full machine (None offline)",
    "host_steal_share": "the machine's CPU time the hypervisor gave to other guests (steal), "
    "0-1 (None offline or where the platform has no steal counter)",
    "ddp_gradient_bytes": "bytes DistributedDataParallel all-reduces per step (its parameters)",
    "ddp_bucket_cap_bytes": "DistributedDataParallel's bucket_cap_mb, in bytes",
    "ddp_bucket_count": "DistributedDataParallel's gradient buckets (its own count once rebuilt "
    "after the first step, else estimated from the gradient bytes and the cap)",
    "dataloader_num_workers": "DataLoader num_workers",
    "dataloader_pin_memory": "DataLoader pin_memory",
    "openmp_runtime": "the OpenMP runtime the job's torch loaded: gnu (libgomp), intel (libiomp5) "
    "or llvm (libomp)",
}
