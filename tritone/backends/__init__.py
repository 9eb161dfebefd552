"""Code generation targets. `compiler.GPUTarget` names a target and
`compiler.KernelOptions` holds the options a kernel is compiled with; the CUDA
backend (`backends/cuda/`) lowers the IR for NVIDIA GPUs."""
