"""capture: run a workload under torch.profiler and write a profile directory (skeleton)."""
