"""Tests of the collectors: psutil, NVML (faked, and real where a GPU is found), py-spy."""
