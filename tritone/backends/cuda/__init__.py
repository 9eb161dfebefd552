"""The CUDA backend: NVIDIA GPUs through NVRTC and the CUDA driver API, all by ctypes.

- `backend.py`: the backend object (`BACKEND`) the registry hands out;
- `lowering.py`: IR -> CUDA C++ (the GPU passes `layout_pass`, `dot/`,
  `pipeline`, `smem`, then `codegen*` over the `prelude`);
- `build.py`: lowering + NVRTC -> cubin, through the disk cache;
- `bindings/`: the ctypes bindings of the driver API, NVRTC and NVML, and where
  those libraries live (`libs.py`);
- `launch_plan.py`: a cubin loaded on a device, launched per call;
- `devices.py`: which GPU kernels run on now; `driver.py`: Triton's driver class;
- `device_array.py`: GPU memory without torch.

Nothing is imported here, so that the bindings and the launch plan load without
the code generator (a kernel found in the disk cache never needs it).
"""
