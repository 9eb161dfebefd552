"""The CUDA backend: IR with layouts -> CUDA C++ text for NVRTC."""
