"""Start the build's kernels by forking one process that has already imported the book's libraries.

Every chapter runs in a fresh kernel, and every fresh kernel spends one to
two seconds of CPU importing the same libraries (NumPy, SciPy, SymPy,
Matplotlib, IPython, JAX, the package) before its first line of the
chapter.  Over 27 chapters on two cores that is a sixth of the build.  A
*zygote* imports them once; each kernel is a fork of it, which starts with
the modules loaded, and then runs exactly what ``python -m
ipykernel_launcher`` runs.

Two programs in one file:

``python kernel_zygote.py serve SOCKET``
    The zygote: imports :data:`PRELOAD`, refuses (exits) if that left a
    second thread (a fork would lose it; BLAS pools are the usual cause, so
    the build sets one BLAS thread first), then listens on the Unix socket
    ``SOCKET``.  For each request it forks a kernel that takes the
    requester's standard streams, environment, folder and arguments, tells
    the requester the kernel's pid, and later its exit status.  If a
    requester goes away first, its kernel is killed; if the build goes
    away, the zygote kills its kernels and exits.

``python kernel_zygote.py kernel SOCKET ARGS...``
    What the kernel manager starts in place of ``python -m
    ipykernel_launcher ARGS...``: a small process that asks the zygote for a
    kernel, forwards every signal it gets (an interrupt, a kill request) to
    it and exits with its status, so to the kernel manager it *is* the
    kernel.  If the zygote does not answer (not started, refused, gone), it
    becomes an ordinary kernel itself (``exec``), so nothing fails for want
    of a zygote: it is only slower.  A zygote that refuses leaves a file
    ``SOCKET.refused`` beside the socket, so the stubs stop waiting at once.

Only the start changes: each chapter still runs alone in a process of its
own, in its own folder, with the environment it would have had; the state
a fork shares (NumPy's legacy global random state) is reseeded from the
system, as a fresh process's would be.  The stub imports nothing beyond
the standard library, so it starts in milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

#: What the zygote imports before it forks: what most chapters import first.
PRELOAD = (
    "numpy",
    "scipy.special",
    "scipy.optimize",
    "scipy.stats",
    "scipy.integrate",
    "mpmath",
    "sympy",
    "matplotlib",
    "matplotlib.pyplot",
    "sympy.stats",
    "IPython",
    "IPython.display",
    "ipykernel.kernelapp",
    "myst_nb",
    "jax",
    "jax.numpy",
    "attnscale",
)

#: Packages whose every module the zygote imports too (but ``__main__``): the book's own package,
#: whose source files have no cached bytecode when ``PYTHONDONTWRITEBYTECODE`` is set.
PRELOAD_PACKAGES = ("attnscale",)

#: How long a kernel stub waits for the zygote to listen before it starts a kernel itself.
WAIT_SECONDS = 30.0

_INLINE = "module://matplotlib_inline.backend_inline"


def _send(connection: socket.socket, message: dict) -> None:
    connection.sendall((json.dumps(message) + "\n").encode())


def _lines(connection: socket.socket):
    """The newline-ended JSON messages arriving on a connection, until it closes."""
    buffer = b""
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)


# --- the stub: what the kernel manager starts -------------------------------------------


def _ordinary_kernel(arguments: list[str]) -> None:
    """Become ``python -m ipykernel_launcher ARGS`` (never returns)."""
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *arguments])


def _connect(path: str, deadline: float):
    import time

    while True:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            client.connect(path)
            return client
        except OSError:
            client.close()
            if time.monotonic() > deadline or os.path.exists(path + ".refused"):
                return None
            time.sleep(0.05)


def kernel_stub(path: str, arguments: list[str]) -> None:
    """Ask the zygote at ``path`` for a kernel with ``arguments``; stand in for it until it exits."""
    import time

    client = _connect(path, time.monotonic() + WAIT_SECONDS)
    if client is None:
        _ordinary_kernel(arguments)
    request = {"arguments": arguments, "folder": os.getcwd(), "environment": dict(os.environ)}
    try:
        socket.send_fds(client, [(json.dumps(request) + "\n").encode()], [0, 1, 2])
        messages = _lines(client)
        pid = next(messages)["pid"]
    except (OSError, StopIteration, KeyError, ValueError):
        client.close()
        _ordinary_kernel(arguments)

    def forward(signum, frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    forwarded = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
    for signum in forwarded:
        signal.signal(signum, forward)
    status = 1  # the zygote went away without a word: report a failure
    try:
        for message in messages:
            status = message.get("exit", status)
    except (OSError, ValueError):
        pass
    sys.exit(status)


# --- the zygote -------------------------------------------------------------------------


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def _become_kernel(request: dict, streams: list[int]) -> None:
    """In the forked child: take the requester's streams, environment and folder; run the kernel."""
    for target, stream in enumerate(streams[:3]):
        os.dup2(stream, target)
    for stream in streams:
        if stream > 2:
            os.close(stream)
    os.environ.clear()
    os.environ.update(request["environment"])
    os.chdir(request["folder"])
    # the path as ipykernel_launcher leaves it: without the current folder, which the
    # kernel's shell adds back itself
    import importlib.util

    sys.argv = [importlib.util.find_spec("ipykernel_launcher").origin, *request["arguments"]]
    # ipykernel asks for the inline backend through MPLBACKEND, which Matplotlib reads at import
    os.environ.setdefault("MPLBACKEND", _INLINE)
    import matplotlib
    import numpy

    matplotlib.rcParams["backend"] = os.environ["MPLBACKEND"]
    # a fresh process draws its own legacy global state (the zygote's is shared by every fork)
    numpy.random.seed()  # noqa: NPY002
    status = 0
    try:
        from ipykernel import kernelapp

        # the kernel app's parent_handle defaults to JPY_PARENT_PID as it was when the zygote
        # imported ipykernel (unset): give it the kernel's own
        kernelapp.IPKernelApp.launch_instance(parent_handle=int(os.environ.get("JPY_PARENT_PID") or 0))
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # reported on the kernel's stderr, as a kernel that crashes would
        import traceback

        traceback.print_exc()
        status = 1
    import atexit

    atexit._run_exitfuncs()  # what the interpreter would run at exit (this process never returns to it)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(status)


def serve(path: str) -> None:
    """Import :data:`PRELOAD`, then fork a kernel for each request on the Unix socket ``path``."""
    import importlib
    import pkgutil
    import selectors

    def refuse(reason):
        """Tell the waiting stubs to start ordinary kernels now, and stop."""
        with open(path + ".refused", "w") as note:
            note.write(reason + "\n")
        sys.exit(f"kernel_zygote: {reason}")

    try:
        for name in PRELOAD:
            try:
                importlib.import_module(name)
            except ImportError:
                pass  # a kernel that needs it imports it (or fails) as it would have
        for package in PRELOAD_PACKAGES:
            root = sys.modules.get(package)
            for module in pkgutil.walk_packages(getattr(root, "__path__", []), package + "."):
                if not module.name.endswith("__main__"):
                    try:
                        importlib.import_module(module.name)
                    except ImportError:
                        pass
    except Exception as error:  # a module that fails on import: its kernel will say so itself
        refuse(f"preloading failed ({type(error).__name__}: {error})")
    if _threads() > 1:
        refuse(f"{_threads()} threads after the imports; a fork would lose them")
    parent = os.getppid()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".new")
    os.rename(path + ".new", path)  # a stub connects only once the zygote listens
    server.listen(64)
    kernels: dict[socket.socket, int] = {}
    killed: set[int] = set()  # kernels whose stub went away: reaped when they end

    def stop(signum=None, frame=None):
        for pid in kernels.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.unlink(path)
        except OSError:
            pass
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select(timeout=0.2):
            if key.fileobj is server:
                connection, _ = server.accept()
                message, streams, _, _ = socket.recv_fds(connection, 1 << 20, 3)
                while not message.endswith(b"\n"):
                    more = connection.recv(1 << 20)
                    if not more:
                        break
                    message += more
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    server.close()
                    for other in kernels:
                        other.close()
                    connection.close()
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    _become_kernel(request, streams)
                for stream in streams:
                    os.close(stream)
                kernels[connection] = pid
                selector.register(connection, selectors.EVENT_READ)
                _send(connection, {"pid": pid})
            else:  # a stub went away (or wrote, which it never does): its kernel goes too
                connection = key.fileobj
                selector.unregister(connection)
                pid = kernels.pop(connection)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                killed.add(pid)
                connection.close()
        for pid in list(killed):
            if os.waitpid(pid, os.WNOHANG)[0]:
                killed.discard(pid)
        # report the kernels that ended
        for connection, pid in list(kernels.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                try:
                    _send(connection, {"exit": code if code >= 0 else 128 - code})
                except OSError:
                    pass
                selector.unregister(connection)
                connection.close()
                del kernels[connection]
        if os.getppid() != parent:  # the build is gone
            stop()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        sys.path.pop(0)  # this file's folder, which a kernel would not have on its path
        serve(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "kernel":
        kernel_stub(sys.argv[2], sys.argv[3:])
    else:
        sys.exit("usage: kernel_zygote.py serve SOCKET | kernel SOCKET ARGS...")
