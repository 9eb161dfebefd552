"""ctypes bindings of the NVIDIA libraries tritone uses: the CUDA driver API
(`driver_api`), NVRTC (`nvrtc`), NVML (`nvml`), and where they live (`libs`)."""
