"""The CPU interpreter as a backend: kernels keep their optimised IR, which
`tritone.interpreter` runs with numpy (`launch_plan.py`); `driver.py` is
Triton's driver class while kernels run here."""
