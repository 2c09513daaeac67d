"""Events and samples to named metrics: step-time breakdown, GPU, host, communication; and
where a sampled Python stack is (`stacks`: the verdict of a job that runs no agent)."""
