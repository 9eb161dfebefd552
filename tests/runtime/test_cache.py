"""The on-disk kernel cache (runtime/cache.py) and the cached GPU compile path
(runtime/build.py) with a stand-in NVRTC and code generator: layout,
verification, damage and recompilation, concurrent writers, Windows paths."""

from __future__ import annotations

import json
import multiprocessing
import os
import secrets
import tempfile
import warnings
from pathlib import Path

import pytest

import tritone
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import build
from tritone.backends.cuda.bindings.nvrtc import CompileResult, NVRTCError
from tritone.compiler.compiler import ASTSource
from tritone.ir.printer import print_module
from tritone.ir.target import KernelOptions
from tritone.platform import SimulatedPlatform, host
from tritone.runtime import cache as cache_module
from tritone.runtime.cache import (
    IncompleteFolder,
    KernelCache,
    StoredEntry,
    _base32,
    default_root,
    entry_names,
    long_path,
    retry_while_shared,
    triton_key,
    writable,
)

TARGET = GPUTarget("cuda", 86, 32)


@tritone.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


SOURCE = ASTSource(copy_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                   {"BLOCK": 64})


@pytest.fixture(scope="module")
def module_ir():
    return tritone.compile(SOURCE).ir


class CountingCompiler:
    """Stands for NVRTC: a deterministic 'cubin' made from the source, and a count of compilations."""

    version = (12, 9)

    def __init__(self, fail_log: str | None = None):
        self.calls: list[tuple] = []
        self.fail_log = fail_log

    def compile(self, source, name, arch, *, ptx_only=False, options=(), arch_suffix=""):
        self.calls.append((name, arch, ptx_only, tuple(options), arch_suffix))
        if self.fail_log is not None:
            raise NVRTCError(f"NVRTC 12.9 could not compile {name} for sm_{arch}", log=self.fail_log,
                             call="nvrtcCompileProgram", code=6)
        body = source.encode() * 3
        ptx = f"// ptx for {name}\n.target sm_{arch}\n"
        return CompileResult(cubin=None if ptx_only else b"\x7fELF" + body, ptx=ptx, log="",
                             target=f"{'compute' if ptx_only else 'sm'}_{arch}{arch_suffix}",
                             nvrtc_version=self.version)


def fake_generate(module, arch, options):
    return (f"extern \"C\" __global__ void copy_kernel() {{}} // sm_{arch} w{options.num_warps}\n",
            "copy_kernel", {"shared": 1024, "nvrtc_options": ["--std=c++17"], "params": [("x", "float*", 8)]})


def compile_once(root: Path, compiler: CountingCompiler, module_ir, **kwargs):
    builds = []

    def build_ir(target):
        builds.append(target)
        return module_ir

    binary = build.compile_kernel(
        "copy_kernel", SOURCE.hash(), build_ir, TARGET, kwargs.pop("options", KernelOptions()),
        toolchain=build.Toolchain(compiler, 86, kwargs.pop("ptx_only", False)),
        cache=KernelCache(str(root)), generate=fake_generate, always_compile=kwargs.pop("always_compile", False))
    return binary, builds


def random_key() -> str:
    return secrets.token_hex(16)


# ---------------------------------------------------------------- names and keys


def test_base32_matches_upstream_triton():
    upstream = pytest.importorskip("triton.runtime.cache")
    for _ in range(20):
        key = secrets.token_hex(secrets.choice([16, 32]))
        assert _base32(key) == upstream._base32(key)
    assert len(_base32(random_key())) == 26


def test_no_base64_so_inductor_uses_base32():
    # Inductor prefers `_base64` when present; base64 names collide on Windows' case-insensitive files.
    assert not hasattr(cache_module, "_base64")


def test_triton_key_is_stable_and_names_the_version():
    key = triton_key()
    assert key == triton_key() and key.startswith(tritone.__version__) and tritone.__tritone_version__ in key


def test_entry_names_shorten_long_names_but_keep_the_cubin_inductor_opens():
    linux = SimulatedPlatform("linux")
    assert entry_names("add_kernel", linux) == cache_module.EntryNames("add_kernel", "add_kernel.cubin")
    long_name = "triton_red_fused__native_batch_norm_legit_functional_add_mean_mul_rsqrt_sub_var_0_" * 2
    names = entry_names(long_name, linux)
    assert len(names.stem) == 64 and names.stem.startswith(long_name[:55])
    assert names.cubin == f"{long_name}.cubin" and names.file("json") == f"{names.stem}.json"
    assert entry_names(long_name + "x", linux).stem != names.stem
    windows = SimulatedPlatform("windows")
    assert entry_names("aux", linux).cubin == "aux.cubin"
    reserved = entry_names("AUX", windows)
    assert reserved.cubin.startswith("AUX_") and reserved.cubin == f"{reserved.stem}.cubin"


def test_cache_key_depends_on_every_input():
    compiler = CountingCompiler()
    base = build.Toolchain(compiler, 86, False)
    key = build.cache_key("src", KernelOptions(), TARGET, base)
    assert len(key) == 32 and int(key, 16) >= 0
    newer = CountingCompiler()
    newer.version = (13, 0)
    variants = [
        build.cache_key("src2", KernelOptions(), TARGET, base),
        build.cache_key("src", KernelOptions(num_warps=8), TARGET, base),
        build.cache_key("src", KernelOptions(enable_fp_fusion=False), TARGET, base),
        build.cache_key("src", KernelOptions(), GPUTarget("cuda", 90, 32), base),
        build.cache_key("src", KernelOptions(), TARGET, build.Toolchain(newer, 86, False)),
        build.cache_key("src", KernelOptions(), TARGET, build.Toolchain(compiler, 86, True)),
    ]
    assert len({key, *variants}) == 7


# ---------------------------------------------------------------- entries


def test_round_trip_in_triton_layout(tmp_path):
    cache = KernelCache(str(tmp_path))
    key = random_key()
    files = {"cubin": secrets.token_bytes(5000), "ptx": b".version 8.5\n", "cu": b"// src\n", "ttir": b"tt\n"}
    folder = cache.put(key, "my_kernel", files, {"shared": 0})
    assert folder == str(tmp_path / _base32(key))
    assert sorted(os.listdir(folder)) == ["my_kernel.cu", "my_kernel.cubin", "my_kernel.json", "my_kernel.ptx",
                                          "my_kernel.ttir"]
    entry = cache.get(key, "my_kernel")
    assert dict(entry.files) == files and entry.metadata == {"shared": 0}
    record = json.loads((tmp_path / _base32(key) / "my_kernel.json").read_text())
    assert record["files"]["cubin"]["size"] == 5000
    assert cache.get(key, "other_kernel") is None and cache.get(random_key(), "my_kernel") is None


@pytest.mark.parametrize("damage", ["truncate cubin", "flip a byte", "delete cubin", "corrupt json", "empty json",
                                    "json of another key"])
def test_damaged_entry_is_a_miss_and_is_recompiled(tmp_path, module_ir, damage):
    compiler = CountingCompiler()
    first, _ = compile_once(tmp_path, compiler, module_ir)
    again, builds = compile_once(tmp_path, compiler, module_ir)
    assert again.from_cache and len(compiler.calls) == 1 and builds == []
    assert again.asm == first.asm and again.metadata == first.metadata
    folder = tmp_path / _base32(first.hash)
    cubin, marker = folder / "copy_kernel.cubin", folder / "copy_kernel.json"
    data = cubin.read_bytes()
    if damage == "truncate cubin":
        cubin.write_bytes(data[: len(data) // 2])
    elif damage == "flip a byte":
        position = secrets.randbelow(len(data))
        cubin.write_bytes(data[:position] + bytes([data[position] ^ 0x40]) + data[position + 1:])
    elif damage == "delete cubin":
        cubin.unlink()
    elif damage == "corrupt json":
        marker.write_bytes(marker.read_bytes()[:-20])
    elif damage == "empty json":
        marker.write_bytes(b"")
    else:
        record = json.loads(marker.read_text())
        record["key"] = random_key()
        marker.write_text(json.dumps(record))
    assert KernelCache(str(tmp_path)).get(first.hash, "copy_kernel") is None
    repaired, builds = compile_once(tmp_path, compiler, module_ir)
    assert not repaired.from_cache and len(compiler.calls) == 2 and len(builds) == 1
    assert cubin.read_bytes() == data
    assert compile_once(tmp_path, compiler, module_ir)[0].from_cache and len(compiler.calls) == 2


def test_compile_kernel_produces_what_compiled_kernel_needs(tmp_path, module_ir):
    compiler = CountingCompiler()
    binary, builds = compile_once(tmp_path, compiler, module_ir, options=KernelOptions(num_warps=8, maxnreg=128,
                                                                                       enable_fp_fusion=False))
    assert set(binary.asm) == {"ttir", "cuda", "ptx", "cubin"}
    assert isinstance(binary.asm["cubin"], bytes) and binary.asm["ttir"] == print_module(module_ir)
    assert binary.asm["cuda"].startswith('extern "C"') and binary.asm["ptx"].startswith("// ptx")
    metadata = binary.metadata
    assert metadata["name"] == metadata["entry"] == "copy_kernel"
    assert (metadata["num_warps"], metadata["num_ctas"], metadata["shared"]) == (8, 1, 1024)
    assert metadata["hash"] == binary.hash and metadata["target"] == TARGET
    assert metadata["nvrtc"] == "12.9" and metadata["compiled_for"] == "sm_86"
    assert builds == [TARGET]
    (name, arch, ptx_only, options, suffix) = compiler.calls[0]
    assert (name, arch, ptx_only, suffix) == ("copy_kernel.cu", 86, False, "")
    assert options == ("--fmad=false", "--minimal", "--generate-line-info", "--maxrregcount=128", "--std=c++17")
    # TorchInductor's static launcher opens exactly this file.
    inductor_path = os.path.join(str(tmp_path), _base32(binary.hash), "copy_kernel.cubin")
    assert Path(inductor_path).read_bytes() == binary.asm["cubin"]


def test_ptx_only_entry_has_no_cubin(tmp_path, module_ir):
    binary, builds = compile_once(tmp_path, CountingCompiler(), module_ir, ptx_only=True)
    assert "cubin" not in binary.asm and binary.metadata["compiled_for"] == "compute_86"
    again, _ = compile_once(tmp_path, CountingCompiler(), module_ir, ptx_only=True)
    assert again.from_cache and "cubin" not in again.asm and again.asm["ptx"] == binary.asm["ptx"]


def test_always_compile_skips_reads_but_still_writes(tmp_path, module_ir):
    compiler = CountingCompiler()
    compile_once(tmp_path, compiler, module_ir, always_compile=True)
    second, _ = compile_once(tmp_path, compiler, module_ir, always_compile=True)
    assert len(compiler.calls) == 2 and not second.from_cache
    assert compile_once(tmp_path, compiler, module_ir)[0].from_cache and len(compiler.calls) == 2


def test_nvrtc_failure_names_the_kernel_and_keeps_the_source(tmp_path, module_ir):
    compiler = CountingCompiler(fail_log="copy_kernel.cu(1): error: identifier \"oops\" is undefined")
    with pytest.raises(NVRTCError) as caught:
        compile_once(tmp_path, compiler, module_ir)
    message = str(caught.value)
    assert message.startswith("kernel copy_kernel: NVRTC 12.9 could not compile") and "oops" in message
    kept = message.split("the generated CUDA is in ")[1].splitlines()[0]
    assert Path(kept).read_text().startswith('extern "C"')
    key = build.cache_key(SOURCE.hash(), KernelOptions(), TARGET, build.Toolchain(compiler, 86, False))
    assert KernelCache(str(tmp_path)).get(key, "copy_kernel") is None


# ---------------------------------------------------------------- concurrency and Windows


class _WritesEvenWhenPresent(KernelCache):
    """A cache whose `put` never finds the entry already written, so every
    process really writes every file at the same time."""

    def get(self, key, name):
        return None


def folder_size(folder) -> int:
    return sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder))


def test_entries_lists_committed_entries_and_incomplete_folders(tmp_path):
    cache = KernelCache(str(tmp_path))
    written = {}
    for name in ("add_kernel", "softmax_kernel", "k" * 80):
        key = random_key()
        files = {"cubin": secrets.token_bytes(secrets.randbelow(5000) + 1), "ptx": secrets.token_bytes(300)}
        written[name] = (key, cache.put(key, name, files, {"name": name}))
    mark = Path(cache.path(written["add_kernel"][0], "add_kernel", "json"))
    os.utime(mark, (1e9, 1e9))  # committed long ago: listed first
    shared_key = written["softmax_kernel"][0]
    cache.put(shared_key, "second_kernel", {"cubin": b"\x7fELF"}, {})  # two kernels under one key

    damaged = {}
    for damage in ("no mark", "short cubin", "corrupt mark", "mark of another key", "empty"):
        key = random_key()
        folder = cache.put(key, "victim", {"cubin": secrets.token_bytes(64)}, {})
        victim = Path(folder)
        if damage == "no mark":
            (victim / "victim.json").unlink()
        elif damage == "short cubin":
            (victim / "victim.cubin").write_bytes(b"short")
        elif damage == "corrupt mark":
            (victim / "victim.json").write_bytes((victim / "victim.json").read_bytes()[:-9])
        elif damage == "mark of another key":
            (victim / "victim.json").write_bytes(mark.read_bytes())
            (victim / "victim.json").rename(victim / "add_kernel.json")
        else:
            for item in victim.iterdir():
                item.unlink()
        damaged[str(victim)] = damage

    # Not this cache's: upstream Triton's 52-character folders, other names, a file, a folder holding a folder.
    (tmp_path / ("A" * 52)).mkdir()
    (tmp_path / "my-notes").mkdir()
    (tmp_path / _base32(random_key())).write_bytes(b"a file")
    nested = tmp_path / _base32(random_key())
    (nested / "inner").mkdir(parents=True)

    contents = cache.entries()
    assert [entry.name for entry in contents.committed][0] == "add_kernel"
    assert sorted(entry.name for entry in contents.committed) == sorted(
        ["add_kernel", "softmax_kernel", "second_kernel", "k" * 80])
    assert [entry.modified for entry in contents.committed] == sorted(entry.modified for entry in contents.committed)
    for entry in contents.committed:
        assert isinstance(entry, StoredEntry) and entry.folder == cache.folder(entry.key)
        assert entry.modified == os.path.getmtime(cache.path(entry.key, entry.name, "json"))
        if entry.key != shared_key:
            assert entry.size == folder_size(entry.folder)
    shared = [entry for entry in contents.committed if entry.key == shared_key]
    assert sum(entry.size for entry in shared) == folder_size(cache.folder(shared_key))

    assert {folder.folder: folder for folder in contents.incomplete}.keys() == damaged.keys()
    for folder in contents.incomplete:
        assert isinstance(folder, IncompleteFolder) and folder.size == folder_size(folder.folder)
        expected = {"no mark": "no commit mark", "short cubin": "victim.cubin listed in victim.json missing",
                    "corrupt mark": "victim.json is damaged", "mark of another key": "another key",
                    "empty": "no commit mark"}[damaged[folder.folder]]
        assert expected in folder.reason, (damaged[folder.folder], folder.reason)
    assert KernelCache(str(tmp_path / "missing")).entries() == cache_module.CacheContents()


def test_remove_deletes_only_entry_folders_of_this_cache(tmp_path):
    cache = KernelCache(str(tmp_path / "root"))
    key = random_key()
    folder = cache.put(key, "k", {"cubin": secrets.token_bytes(100), "ptx": b"p"}, {})
    Path(folder, "k.cubin.123.abcdef01.tmp").write_bytes(b"left by a crash")
    other = KernelCache(str(tmp_path / "other"))
    foreign = other.put(random_key(), "k", {"cubin": b"x"}, {})
    upstream = tmp_path / "root" / ("A" * 52)
    upstream.mkdir()
    nested = Path(cache.folder(random_key()))
    (nested / "inner").mkdir(parents=True)
    for refused in (foreign, str(upstream), str(nested), str(tmp_path / "root"),
                    os.path.join(folder, "..", "..", "other", os.path.basename(foreign))):
        with pytest.raises(ValueError, match="not an entry folder of the kernel cache"):
            cache.remove(refused)
    assert os.path.isdir(foreign) and upstream.is_dir() and (nested / "inner").is_dir()
    cache.remove(folder)
    assert not os.path.exists(folder) and cache.get(key, "k") is None
    cache.remove(folder)  # already gone: another process pruned it
    assert cache.entries() == cache_module.CacheContents()


def test_remove_retries_while_another_process_holds_a_file(tmp_path, monkeypatch):
    pauses = []
    cache = KernelCache(str(tmp_path), sleep=pauses.append)
    folder = cache.put(random_key(), "k", {"cubin": b"abc"}, {})
    real_remove = os.remove
    failures = iter([_sharing_violation(), _sharing_violation()])

    def busy_then_free(path):
        error = next(failures, None)
        if error is not None:
            raise error
        real_remove(path)

    monkeypatch.setattr(cache_module.os, "remove", busy_then_free)
    cache.remove(folder)
    assert not os.path.exists(folder) and len(pauses) == 2

    locked = cache.put(random_key(), "k", {"cubin": b"abc"}, {})

    def always_busy(path):
        raise _sharing_violation()

    monkeypatch.setattr(cache_module.os, "remove", always_busy)
    with pytest.raises(PermissionError):
        cache.remove(locked)
    assert sorted(os.listdir(locked)) == ["k.cubin", "k.json"]


def test_writable_says_why_a_folder_cannot_hold_the_cache(tmp_path):
    fresh = tmp_path / "new folder" / "cache"
    assert writable(str(fresh), host()) is None and fresh.is_dir() and not list(fresh.iterdir())
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    problem = writable(str(blocker / "cache"), host())
    assert problem is not None and "a file" in problem


def _write_entry(root: str, key: str, files: dict, barrier, results) -> None:
    barrier.wait()
    folder = _WritesEvenWhenPresent(root).put(key, "shared_kernel", files, {"writer": "any"})
    entry = KernelCache(root).get(key, "shared_kernel")
    results.put(folder is not None and entry is not None and dict(entry.files) == files)


def test_eight_processes_writing_one_entry_leave_one_valid_entry(tmp_path):
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    key = random_key()
    files = {"cubin": secrets.token_bytes(200_000), "ptx": secrets.token_hex(20_000).encode(), "cu": b"src",
             "ttir": b"ir"}
    barrier, results = context.Barrier(8), context.Queue()
    workers = [context.Process(target=_write_entry, args=(str(tmp_path), key, files, barrier, results))
               for _ in range(8)]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert outcomes == [True] * 8 and [worker.exitcode for worker in workers] == [0] * 8
    assert os.listdir(tmp_path) == [_base32(key)]
    assert sorted(os.listdir(tmp_path / _base32(key))) == sorted(
        f"shared_kernel.{kind}" for kind in ["cubin", "ptx", "cu", "ttir", "json"])
    assert dict(KernelCache(str(tmp_path)).get(key, "shared_kernel").files) == files


def _sharing_violation() -> PermissionError:
    error = PermissionError(13, "The process cannot access the file because it is being used by another process")
    error.winerror = 32
    return error


def test_replace_is_retried_while_another_process_holds_the_file(tmp_path, monkeypatch):
    pauses = []
    real_replace = os.replace
    failures = iter([_sharing_violation(), _sharing_violation()])

    def busy_then_free(source, destination):
        error = next(failures, None)
        if error is not None:
            raise error
        real_replace(source, destination)

    monkeypatch.setattr(cache_module.os, "replace", busy_then_free)
    cache = KernelCache(str(tmp_path), sleep=pauses.append)
    key = random_key()
    assert cache.put(key, "k", {"cubin": b"abc"}, {}) is not None
    assert len(pauses) == 2 and pauses == sorted(pauses)
    assert cache.get(key, "k").files == {"cubin": b"abc"}
    assert not [name for name in os.listdir(cache.folder(key)) if name.endswith(".tmp")]


def test_a_file_locked_for_good_counts_as_written_when_identical(tmp_path, monkeypatch):
    cache = KernelCache(str(tmp_path), sleep=lambda seconds: None)
    key = random_key()
    cache.put(key, "k", {"cubin": b"same"}, {})

    def always_busy(source, destination):
        raise _sharing_violation()

    monkeypatch.setattr(cache_module.os, "replace", always_busy)
    path = cache.path(key, "k", "cubin")
    cache.write_file(path, b"same")
    with pytest.raises(PermissionError):
        cache.write_file(path, b"different")
    assert Path(path).read_bytes() == b"same"
    assert not [name for name in os.listdir(cache.folder(key)) if name.endswith(".tmp")]


def test_only_sharing_violations_are_retried():
    attempts = []

    def denied():
        attempts.append(1)
        raise PermissionError(13, "Permission denied")

    with pytest.raises(PermissionError):
        retry_while_shared(denied, sleep=lambda seconds: None)
    assert len(attempts) == 1


def windows(local_app_data: str) -> SimulatedPlatform:
    return SimulatedPlatform("windows", env={"LOCALAPPDATA": local_app_data}, home="C:\\Users\\someone")


def test_default_paths_stay_short_for_a_60_character_kernel_name():
    name = ("fused_" + "x" * 60)[:60]
    key = random_key()
    platforms = [
        windows("C:\\Users\\jane.doe1234\\AppData\\Local"),
        SimulatedPlatform("linux", home="/home/jane.doe1234"),
    ]
    for platform in platforms:
        cache = KernelCache(default_root(platform, None), platform)
        for kind in ["cubin", "ptx", "cu", "ttir", "json"]:
            path = cache.path(key, name, kind)
            assert len(path) < 150, path
    assert KernelCache(default_root(platforms[0], None), platforms[0]).path(key, name, "cubin") == (
        f"C:\\Users\\jane.doe1234\\AppData\\Local\\tritone\\cache\\{_base32(key)}\\{name}.cubin")


def test_simulated_windows_root_with_spaces_and_a_non_ascii_user_name():
    platform = windows("C:\\Users\\Jürgen Müller-Łukasz Ørsted\\AppData\\Local")
    root = default_root(platform, None)
    assert root == "C:\\Users\\Jürgen Müller-Łukasz Ørsted\\AppData\\Local\\tritone\\cache"
    assert default_root(platform, "D:\\caches\\triton") == "D:\\caches\\triton"
    key = random_key()
    path = KernelCache(root, platform).path(key, "add_kernel", "cubin")
    assert path == f"{root}\\{_base32(key)}\\add_kernel.cubin" and long_path(platform, path) == path
    no_local_app_data = SimulatedPlatform("windows", home="C:\\Users\\Zoë Ä")
    assert default_root(no_local_app_data, None) == "C:\\Users\\Zoë Ä\\AppData\\Local\\tritone\\cache"


def test_long_windows_paths_get_the_extended_prefix():
    platform = windows("C:\\Users\\Ånna Lindqvist\\AppData\\Local")
    deep = "C:\\Users\\Ånna Lindqvist\\Projects\\" + "\\".join(["a rather long folder name"] * 8)
    cache = KernelCache(deep, platform)
    path = cache.path(random_key(), "k" * 60, "cubin")
    assert len(path) > 240 and long_path(platform, path) == "\\\\?\\" + path
    share = "\\\\fileserver\\team share\\" + "\\".join(["caches of the team"] * 12)
    shared_path = KernelCache(share, platform).path(random_key(), "k", "json")
    assert long_path(platform, shared_path) == "\\\\?\\UNC\\" + shared_path[2:]
    assert long_path(SimulatedPlatform("linux"), "/" + "x" * 300) == "/" + "x" * 300
    assert long_path(platform, "C:\\short\\path.json") == "C:\\short\\path.json"


def test_real_folder_with_spaces_and_non_ascii_characters(tmp_path):
    root = tmp_path / "Jürgen Müller" / "AppData Local" / "tritone cache"
    cache = KernelCache(str(root), host())
    key = random_key()
    files = {"cubin": secrets.token_bytes(100), "cu": "// Grüße\n".encode()}
    cache.put(key, "kernel_ä", files, {"note": "ünïcode"})
    entry = cache.get(key, "kernel_ä")
    assert dict(entry.files) == files and entry.metadata == {"note": "ünïcode"}


def test_unwritable_root_falls_back_to_the_temp_folder_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "_caches", {})
    monkeypatch.setattr(cache_module, "_warned", set())
    monkeypatch.setattr(cache_module.tempfile, "tempdir", str(tmp_path / "temp"))
    (tmp_path / "temp").mkdir()
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    wanted = str(blocker / "cache")
    with pytest.warns(UserWarning, match="cannot write its kernel cache to .*a file.*TRITON_CACHE_DIR"):
        cache = cache_module.cache_for_root(wanted)
    assert cache is not None and cache.root.startswith(str(tmp_path / "temp" / "tritone-cache-"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache_module.cache_for_root(wanted) is cache  # decided once, warned once
    key = random_key()
    cache.put(key, "k", {"cubin": b"x"}, {})
    assert cache.get(key, "k") is not None


def test_default_cache_follows_triton_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "_caches", {})
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "chosen"))
    assert cache_module.default_cache().root == str(tmp_path / "chosen")
    monkeypatch.delenv("TRITON_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if not host().is_windows:
        assert cache_module.default_cache().root == str(tmp_path / "xdg" / "tritone")


def test_the_suite_caches_in_a_private_folder(monkeypatch):
    """tests/conftest.py points every cache at a temporary folder, so running the
    tests leaves nothing in the user's cache."""
    monkeypatch.setattr(cache_module, "_caches", {})
    root = Path(cache_module.default_cache().root)
    assert root == Path(os.environ["TRITON_CACHE_DIR"])
    assert Path(tempfile.gettempdir()).resolve() in root.resolve().parents
    assert Path.home().resolve() not in root.resolve().parents
    for variable in ("TRITON_HOME", "XDG_CACHE_HOME"):
        assert Path(os.environ[variable]).parent == root.parent
