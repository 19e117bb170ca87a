"""The build's kernels forked from one zygote (``book/_ext/kernel_zygote.py``) behave as fresh ones.

A kernel started through the zygote must see its own environment and
folder, show figures inline, stop on an interrupt, and die with the
process the kernel manager holds; a stub that finds no zygote must start
an ordinary kernel.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from bookbuild import ROOT, load_extension

PARALLEL = load_extension("parallel_chapters")
ZYGOTE = ROOT / "book" / "_ext" / "kernel_zygote.py"


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    """A zygote on a socket of its own, started with one BLAS thread as the build starts it."""
    path = str(tmp_path_factory.mktemp("zygote") / f"z-{uuid.uuid4().hex[:8]}")
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    process = subprocess.Popen([sys.executable, str(ZYGOTE), "serve", path], env=environment)
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        assert process.poll() is None, "the zygote exited before it listened"
        assert time.monotonic() < deadline, "the zygote did not listen within 60 s"
        time.sleep(0.05)
    yield path
    process.terminate()
    process.wait(timeout=10)
    assert not os.path.exists(path), "the zygote left its socket behind"


async def _run(code: str, kc, timeout: float = 60.0):
    """Execute ``code``; return the reply's status and every output message's content."""
    outputs = []
    reply = await kc.execute_interactive(
        code, timeout=timeout, output_hook=lambda message: outputs.append(message["content"])
    )
    return reply["content"]["status"], outputs


def _text(outputs) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs)


async def _with_kernel(zygote_path, folder, body):
    """Run ``body(km, kc)`` on a kernel started through the zygote (or an ordinary one if ``None``)."""
    # the manager reads the variable from its own environment, as in a build's workers
    if zygote_path:
        os.environ[PARALLEL.KERNEL_ZYGOTE] = zygote_path
    try:
        km = PARALLEL.IPCKernelManager()
        assert ("kernel_zygote.py" in " ".join(km.format_kernel_cmd())) == bool(zygote_path)
        await km.start_kernel(cwd=str(folder), env={**os.environ, "ZYGOTE_TEST_MARK": "fresh"})
    finally:
        os.environ.pop(PARALLEL.KERNEL_ZYGOTE, None)
    kc = km.client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        return await body(km, kc)
    finally:
        kc.stop_channels()
        if km.has_kernel:
            await km.shutdown_kernel(now=True)


#: What a chapter's kernel can see of how it was started.
PROBE = (
    "import os, sys\n"
    "from ipykernel.kernelapp import IPKernelApp\n"
    "print(repr((os.environ['ZYGOTE_TEST_MARK'], os.getcwd(), sys.path, sys.argv[0],"
    " os.environ.get('MPLBACKEND'), IPKernelApp.instance().parent_handle)))\n"
    "print('scipy.stats' in sys.modules, os.getpid())"
)


def test_a_forked_kernel_is_a_fresh_one(zygote, tmp_path):
    """The same environment, folder, path and backend as an ordinary kernel, the libraries already
    loaded; figures inline; a clean exit."""

    async def body(km, kc):
        status, out = await _run(PROBE, kc)
        assert status == "ok", out
        seen, loaded = _text(out).strip().splitlines()
        status, out = await _run("import matplotlib.pyplot as plt\nplt.plot([0, 1]);\nplt.show()", kc)
        assert status == "ok" and any("image/png" in o.get("data", {}) for o in out), out
        return seen, loaded.split()

    ordinary, (preloaded_ordinary, _) = asyncio.run(_with_kernel(None, tmp_path, body))
    forked, (preloaded, pid) = asyncio.run(_with_kernel(zygote, tmp_path, body))
    assert forked == ordinary and str(tmp_path) in forked
    assert (preloaded_ordinary, preloaded) == ("False", "True")  # only the start differs
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail(f"the forked kernel {pid} outlived its shutdown")


def test_an_interrupt_reaches_the_forked_kernel(zygote, tmp_path):
    async def body(km, kc):
        running = asyncio.ensure_future(_run("import time\ntime.sleep(60)", kc, timeout=30))
        await asyncio.sleep(2)
        started = time.monotonic()
        await km.interrupt_kernel()
        status, _ = await running
        assert status == "error" and time.monotonic() - started < 10
        status, out = await _run("print(1 + 1)", kc)  # the kernel lives on
        assert status == "ok" and _text(out).strip() == "2"

    asyncio.run(_with_kernel(zygote, tmp_path, body))


def test_killing_the_stub_kills_the_kernel(zygote, tmp_path):
    """The kernel manager kills the process it started (the stub); the zygote kills the kernel then."""

    async def body(km, kc):
        _, out = await _run("import os\nprint(os.getpid())", kc)
        pid = int(_text(out))
        os.kill(km.provisioner.process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            await asyncio.sleep(0.1)
        pytest.fail(f"the kernel {pid} outlived its stub")

    asyncio.run(_with_kernel(zygote, tmp_path, body))


def test_without_a_zygote_the_stub_becomes_an_ordinary_kernel(tmp_path):
    """No zygote listening: the stub runs ``python -m ipykernel_launcher`` itself.

    Here with ``--version``, which prints IPython's version.
    """
    program = (
        f"import sys; sys.path.insert(0, {str(ZYGOTE.parent)!r}); import kernel_zygote as k; "
        f"k.WAIT_SECONDS = 0.3; k.kernel_stub({str(tmp_path / 'none')!r}, ['--version'])"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    import IPython

    assert result.returncode == 0 and result.stdout.strip() == IPython.__version__, result


def test_the_manager_starts_an_ordinary_kernel_without_the_variable(monkeypatch):
    monkeypatch.delenv(PARALLEL.KERNEL_ZYGOTE, raising=False)
    km = PARALLEL.IPCKernelManager()
    assert km.format_kernel_cmd()[1:3] == ["-m", "ipykernel_launcher"]


def test_a_refusing_zygote_sends_its_stubs_to_ordinary_kernels_at_once(tmp_path):
    """A zygote that cannot fork safely leaves SOCKET.refused: a stub then starts its own kernel."""
    path = tmp_path / "z"
    (tmp_path / "z.refused").write_text("refused\n")
    program = (
        f"import sys; sys.path.insert(0, {str(ZYGOTE.parent)!r}); import kernel_zygote as k; "
        f"k.kernel_stub({str(path)!r}, ['--version'])"
    )
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and time.monotonic() - started < 10, result  # not its 30 s wait


def test_the_zygote_preloads_what_the_chapters_import():
    module = load_extension("kernel_zygote")
    assert {"numpy", "scipy.stats", "sympy", "matplotlib.pyplot", "attnscale"} <= set(module.PRELOAD)
    assert Path(module.__file__).resolve() == ZYGOTE.resolve() == PARALLEL.ZYGOTE_PROGRAM.resolve()
