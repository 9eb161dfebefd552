"""`python -m tritone selftest`: the checks run where kernels run (the CPU
interpreter, or a GPU through DeviceArrays, simulated here with a driver whose
device memory is host memory and the kernels interpreted), the table says where
each ran, failures give exit code 1; it passes without torch, on the GPU where
kernels run on one."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime._host_gpu import install_host_gpu
from tritone import selftest
from tritone.backends import sites
from tritone.backends.compiler import GPUTarget


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def test_checks_pass_in_the_interpreter(interpret):
    results = selftest.run_checks()
    assert [r.name for r in results] == ["vector_add", "fused_softmax", "matmul"]
    assert all(r.passed for r in results), results
    assert {r.ran_on for r in results} == {"CPU interpreter"}


def test_the_gpu_branch_puts_the_inputs_in_device_memory(monkeypatch, interpret):
    """Where kernels run on a GPU, the inputs go to DeviceArrays (no torch) and the
    table names the GPU. The simulated GPU's memory is host memory and the kernels
    run in the interpreter, which copies DeviceArrays through the driver."""
    gpu = install_host_gpu(monkeypatch)
    monkeypatch.setattr(sites, "launch_site", lambda: (GPUTarget("cuda", 90, 32), 0))
    results = selftest.run_checks()
    assert all(r.passed for r in results), results
    assert {r.ran_on for r in results} == {"Simulated GPU (sm_90)"}
    # Every input and output went to the device (3 + 2 + 3 arrays) and was freed after its check.
    assert len(gpu.library.cuMemAlloc_v2.calls) == 8 and gpu.allocations == {}
    report = io.StringIO()
    selftest.print_report(results, report)
    lines = report.getvalue().splitlines()
    assert lines[0].endswith("selftest on Simulated GPU (sm_90)") and lines[1].endswith("ran on")
    assert all(line.endswith("  Simulated GPU (sm_90)") for line in lines[2:5]) and lines[5] == "all 3 passed"


def test_a_gpu_failure_is_reported_with_where_it_happened(monkeypatch, interpret):
    gpu = install_host_gpu(monkeypatch)
    monkeypatch.setattr(sites, "launch_site", lambda: (GPUTarget("cuda", 90, 32), 0))
    gpu.library.functions["cuMemAlloc_v2"].implementation = lambda out, nbytes: 2  # out of memory
    results = selftest.run_checks(seed=1)
    assert not any(r.passed for r in results)
    assert all(r.ran_on == "Simulated GPU (sm_90)" and "cuMemAlloc_v2 failed" in r.error for r in results)


def test_selftest_reports_a_failure_with_exit_code_1(monkeypatch, capsys, interpret):
    from tritone.__main__ import main

    def broken(rng, memory):
        raise ValueError("deliberately broken")

    monkeypatch.setattr(selftest, "CHECKS", selftest.CHECKS[:1] + (("broken", broken),))
    assert main(["selftest", "--seed", "1"]) == 1
    printed = capsys.readouterr().out
    assert "deliberately broken" in printed and "1 of 2 FAILED" in printed
    assert "broken" in printed and "CPU interpreter" in printed


def test_selftest_without_torch():
    """The first command after an install needs nothing but tritone and numpy, on
    the GPU where kernels run on one (here: whatever `active_target` says)."""
    code = ("import sys\n"
            "class NoTorch:\n"  # as if torch were not installed
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.partition('.')[0] == 'torch':\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            "from tritone.__main__ import main\n"
            "assert 'torch' not in sys.modules\n"
            "sys.exit(main(['selftest']))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            cwd=Path(__file__).resolve().parent.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    table = result.stdout[result.stdout.index("kernel "):].splitlines()
    assert len(table) == 5 and table[-1] == "all 3 passed"
    target = sites.active_target()
    where = "CPU interpreter" if target.backend == "interpreter" else f"(sm_{target.arch})"
    assert all(line.endswith(where) for line in table[1:4]), result.stdout
