"""Stand-ins for libraries the tests cannot rely on having (NVML without a GPU)."""
