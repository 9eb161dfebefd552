"""A lint over tritone/, the startup hook and the build backend for what
breaks on Windows: POSIX-only calls and modules (os.fork, fcntl, ...),
platform-width C integers (ctypes.c_long is 32 bits on Windows), POSIX path
literals (/tmp, /proc, /usr), ldconfig, and shared-library names
(libfoo.so.1) without a Windows branch or a `.dll` counterpart beside them.
The scan reads the AST, so docstrings and comments never count; the checker
itself is tested on small snippets first."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import tritone

PACKAGE = Path(tritone.__file__).resolve().parent

POSIX_ONLY_OS = frozenset({
    "fork", "forkpty", "getuid", "geteuid", "getgid", "getegid", "getgroups", "setsid", "setpgid", "getpgid",
    "killpg", "uname", "statvfs", "fstatvfs", "mkfifo", "mknod", "chown", "lchown", "fchown", "chroot",
    "sched_getaffinity", "sched_setaffinity", "getloadavg", "nice", "wait3", "wait4", "pipe2", "posix_spawn",
    "getpriority", "setpriority", "sync", "ttyname", "openpty",
})
POSIX_ONLY_SIGNAL = frozenset({"SIGKILL", "SIGALRM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGCHLD", "SIGPIPE", "SIGQUIT",
                               "alarm", "setitimer", "getitimer", "pause"})
POSIX_ONLY_MODULES = frozenset({"fcntl", "pwd", "grp", "resource", "termios", "tty", "pty", "posix", "crypt", "syslog",
                                "spwd", "nis"})
PLATFORM_WIDTH = frozenset({"c_long", "c_ulong"})
_POSIX_PATH = re.compile(r"^/(tmp|var|dev|proc|sys|usr|etc|lib|lib64|opt|run|home|root)(/|$)")
_SHARED_LIBRARY = re.compile(r"^lib[\w.+-]*\.(so(\.\d+)*|dylib)$")
_PLATFORM_TEST = re.compile(r"is_windows|sys\.platform|os\.name|platform\.system|win32|['\"]windows['\"]")


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """Each node's parent, in one walk of the tree."""
    parents = {}
    pending = [tree]
    while pending:
        parent = pending.pop()
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
            pending.append(child)
    return parents


def _scope(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    """The innermost function around `node`, or the module."""
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return node


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of `scope` outside the functions nested in it."""
    found = []
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending.extend(ast.iter_child_nodes(node))
    return found


def _tests_platform(node: ast.AST) -> bool:
    return isinstance(node, (ast.If, ast.IfExp, ast.While)) and bool(_PLATFORM_TEST.search(ast.unparse(node.test)))


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside a branch on the platform, or in a function (or module) that has one,
    or in a `try` that handles the ImportError."""
    child = node
    while child in parents:
        parent = parents[child]
        if _tests_platform(parent):
            return True
        if isinstance(parent, ast.Try) and child in parent.body:
            caught = " ".join(ast.unparse(handler.type) for handler in parent.handlers if handler.type is not None)
            if re.search(r"ImportError|ModuleNotFoundError|Exception", caught):
                return True
        child = parent
    return any(_tests_platform(own) for own in _own_nodes(_scope(node, parents)))


def _is_docstring(node: ast.Constant, parents: dict[ast.AST, ast.AST]) -> bool:
    """A string standing alone as a statement: documentation, not data."""
    return isinstance(parents.get(node), ast.Expr)


def _strings(scope: ast.AST) -> list[str]:
    return [node.value for node in _own_nodes(scope) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def scan(source: str, filename: str = "<source>") -> list[str]:
    """Every Windows problem in `source`, as "file:line: what, and the fix"."""
    tree = ast.parse(source, filename)
    parents = _parents(tree)
    problems = []

    def report(node: ast.AST, message: str) -> None:
        problems.append(f"{filename}:{node.lineno}: {message}")

    for node in parents:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner, name = node.value.id, node.attr
            if owner == "os" and name in POSIX_ONLY_OS and not _guarded(node, parents):
                report(node, f"os.{name} does not exist on Windows: branch on the platform or use a portable call")
            if owner == "signal" and name in POSIX_ONLY_SIGNAL and not _guarded(node, parents):
                report(node, f"signal.{name} does not exist on Windows: branch on the platform")
            if owner == "ctypes" and name in PLATFORM_WIDTH:
                report(node, f"ctypes.{name} is 32 bits on Windows and 64 on Linux: use c_int32/c_int64/c_uint64")
        elif isinstance(node, ast.ImportFrom) and node.module == "ctypes":
            for alias in node.names:
                if alias.name in PLATFORM_WIDTH:
                    report(node, f"ctypes.{alias.name} is 32 bits on Windows and 64 on Linux: use fixed widths")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module.split(".")[0] in POSIX_ONLY_MODULES and not _guarded(node, parents):
                    report(node, f"module {module} does not exist on Windows: import it under a platform branch")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get_context", "set_start_method"):
            if any(isinstance(arg, ast.Constant) and arg.value == "fork" for arg in node.args):
                report(node, "the fork start method does not exist on Windows: use spawn")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and not _is_docstring(node, parents):
            text = node.value
            if _POSIX_PATH.match(text) and not _guarded(node, parents):
                report(node, f"POSIX path {text!r} without a Windows branch: use tempfile/platform folders")
            if "ldconfig" in text and not _guarded(node, parents):
                report(node, "ldconfig does not exist on Windows: find libraries through tritone.platform")
            if _SHARED_LIBRARY.match(text) and not _guarded(node, parents):
                scope = _scope(node, parents)
                if not any(other.lower().endswith(".dll") for other in _strings(scope)):
                    report(node, f"library name {text!r} has no Windows (.dll) counterpart or platform branch")
    return problems


def test_the_package_has_no_posix_only_code():
    # The startup hook ships beside the package; the build backend builds it on Windows too.
    shipped = [*sorted(PACKAGE.rglob("*.py")), PACKAGE.parent / "_tritone_triton_hook.py",
               *sorted((PACKAGE.parent / "build_backend").glob("*.py"))]
    problems = []
    for path in shipped:
        problems += scan(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("source, words", [
    ("import os\npid = os.fork()\n", "os.fork does not exist on Windows"),
    ("import os\ndef owner():\n    return os.getuid()\n", "os.getuid"),
    ("import fcntl\n", "module fcntl does not exist on Windows"),
    ("from resource import getrlimit\n", "module resource"),
    ("import ctypes\nx = ctypes.c_long(3)\n", "ctypes.c_long is 32 bits on Windows"),
    ("from ctypes import c_ulong\n", "ctypes.c_ulong is 32 bits on Windows"),
    ("path = '/tmp/tritone'\n", "POSIX path '/tmp/tritone'"),
    ("def maps(name):\n    return open(f'/proc/self/{name}')\n", "POSIX path '/proc/self/'"),
    ("import subprocess\nsubprocess.run(['ldconfig', '-p'])\n", "ldconfig"),
    ("import ctypes\nlib = ctypes.CDLL('libcuda.so.1')\n", "'libcuda.so.1' has no Windows (.dll) counterpart"),
    ("import multiprocessing\nmultiprocessing.get_context('fork')\n", "fork start method"),
    ("import signal\nsignal.alarm(3)\n", "signal.alarm"),
])
def test_scanner_finds(source, words):
    problems = scan(source)
    assert len(problems) == 1 and words in problems[0], problems


@pytest.mark.parametrize("source", [
    '"""Docstrings may say /tmp, libcuda.so.1, os.fork and ldconfig."""\n',
    "import sys\nif sys.platform != 'win32':\n    import fcntl\n",
    "try:\n    import pwd\nexcept ImportError:\n    pwd = None\n",
    "import os\ndef maps(platform):\n    if platform.is_windows:\n        return None\n    return '/proc/self/maps'\n",
    "def driver(is_windows):\n    return 'nvcuda.dll' if is_windows else 'libcuda.so.1'\n",
    "NAMES = ('libnvrtc.so.12',)\nWINDOWS = ('nvrtc64_120_0.dll',)\n",
    "import os\nif os.name == 'posix':\n    os.setsid()\n",
    "message = 'point TRITONE_LIBCUDA_PATH at libcuda.so.1 or nvcuda.dll'\n",
    "from ctypes import c_int32, c_uint64\n",
])
def test_scanner_accepts(source):
    assert scan(source) == []
