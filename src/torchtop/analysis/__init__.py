"""Events and samples to named metrics: step-time breakdown, GPU, host, communication."""
