"""Execute the chapters side by side: a parallel read, scheduled longest first.

MyST-NB executes a notebook while Sphinx reads it, so a parallel read runs
several chapters' kernels at once.  ``jupyter-book build`` (1.x) always
asks Sphinx for a serial build; this extension turns the read parallel
from inside, so the README's build command stays one plain line:

* ``app.parallel`` is set to ``ATTNSCALE_BUILD_JOBS`` processes (default:
  the number of CPUs plus one, so that a core never waits while a kernel
  starts or Sphinx pickles a result).  ``ATTNSCALE_BUILD_JOBS=1`` gives the
  serial build (``benchmarks/build_times.py`` measures both).
* Sphinx splits the documents into equal runs in name order (seven and
  seven on two CPUs: one core idles while the other finishes the heavy
  half).  Here every document is its own task, and the tasks start
  heaviest first (longest-processing-time-first scheduling), the weight of
  a document being its execution time measured by
  ``benchmarks/build_times.py --save-weights`` (``chapter_seconds.json``
  here), else its source size: with sizes a light chapter with a long
  text started early and a heavy short one ran last, alone on one core.
* Three extensions that jupyter-book loads do not say whether they are
  safe for a parallel read, so Sphinx would fall back to a serial one with
  a warning.  Each was read (the versions pinned in requirements.txt):
  ``sphinx_multitoc_numbering`` renumbers sections after reading,
  ``sphinx_jupyterbook_latex`` acts only for the LaTeX builder, and
  ``sphinx-mathjax-offline`` copies files when the build ends; none keeps
  per-document state, so they are declared safe here.
* sphinx-proof keeps its theorems in ``env.proof_list`` (merged by its own
  handler) and nothing in its domain's data, but lacks the
  ``merge_domaindata`` method that Sphinx calls after a parallel read; an
  empty one is added.
* In a parallel read every kernel gets one BLAS thread
  (``OPENBLAS_NUM_THREADS=1`` and its kin, unless set already): with more
  kernels than cores, threaded BLAS in each spun against the others, and
  the initialization chapter, heavy in matrix products, took three times
  as long as on its own.
* Every chapter's kernel listens on Unix sockets (ZeroMQ's IPC transport)
  under a name of its own, not on TCP ports (:class:`IPCKernelManager`).
  Over TCP a kernel manager picks "free" ports by binding and releasing
  them, and the kernel binds them a moment later; with three chapters'
  kernels starting at once, two drew the same port (seen once in about a
  dozen builds: ``ZMQError: Address already in use``, then "Kernel didn't
  respond in 60 seconds" and a red build).  A socket file named after a
  random token cannot be drawn twice.
* When a chapter fails in a worker process, Sphinx re-raises only the
  exception's first line (the chapter's path) and drops the worker's
  traceback, which holds the failing cell and its error; it is printed
  here, so a parallel build says why it failed as a serial one does.
  Sphinx also stops at the first failing chapter and kills the others'
  workers; here every chapter is read to its end, each failing one's
  traceback printed under its path, and the read fails after the last,
  naming every chapter that failed (:func:`_join_one_keep_going`).  So one
  build shows every failing chapter, and ``tests/test_book.py`` injects
  its cell faults into one build.

* The kernels are forked from one process that has already imported the
  libraries most chapters import (``kernel_zygote.py``): each fresh kernel
  spent one to two seconds of CPU on those imports, a sixth of the build.
  A kernel started so sees the environment, folder and path an ordinary
  one would, and if the zygote is missing the kernel starts the ordinary
  way (``tests/test_kernel_zygote.py``).

* The training chapter and its evidence page train the same sweep of
  heads.  Each build gives its kernels one fresh folder
  (``ATTNSCALE_SHARED_RESULTS``) where
  :func:`attnscale.support.shared.shared_result` keeps such a result: the
  first kernel to ask computes it, the other reads it.  The folder is
  removed when the build ends.

Only the read is affected: what each chapter computes, and every way the
build fails (``tests/test_book.py`` injects each fault into a book large
enough to be read in parallel), stay the same.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import myst_nb.core.execute.direct as myst_nb_direct
import sphinx.builders
from jupyter_client.manager import AsyncKernelManager
from sphinx.domains.std import StandardDomain
from sphinx.errors import SphinxParallelError
from sphinx.util import logging
from sphinx.util.parallel import ParallelTasks
from sphinx.util.parallel import make_chunks as sphinx_make_chunks
from traitlets import default

logger = logging.getLogger(__name__)

#: The thread counts of the BLAS libraries numpy and scipy may load.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
UNDECLARED_BUT_SAFE = ("sphinx_multitoc_numbering", "sphinx_jupyterbook_latex", "sphinx-mathjax-offline")


def build_jobs() -> int:
    """Processes for the read: ``ATTNSCALE_BUILD_JOBS`` or the CPUs plus one."""
    value = os.environ.get("ATTNSCALE_BUILD_JOBS", "").strip()
    if not value:
        return (os.cpu_count() or 1) + 1
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"ATTNSCALE_BUILD_JOBS must be a positive integer, got {value!r}")
    return int(value)


#: Each chapter's execution time in a serial build, in seconds, as
#: ``benchmarks/build_times.py --save-weights`` last measured it.  It only
#: orders the tasks: a stale or missing entry can make the build slower,
#: never different.
CHAPTER_SECONDS = Path(__file__).with_name("chapter_seconds.json")


def _measured_seconds() -> dict[str, float]:
    try:
        seconds = json.loads(CHAPTER_SECONDS.read_text())["seconds"]
        return {str(k): float(v) for k, v in seconds.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _heaviest_first(app, make_chunks_of_sphinx):
    """A ``make_chunks`` that gives one document per task, heaviest started first, for the read.

    A document's weight is its measured execution time (:data:`CHAPTER_SECONDS`)
    or, for one not measured, its source size over 5000 bytes per second (the
    chapters' sizes and times were of that order when this was written).

    The write (after ``env-updated``) keeps Sphinx's own few large chunks:
    each task is a fork of the main process, which by then holds every
    chapter's outputs, and one fork per document cost that process some
    0.25 s each, in series (7.6 s of a 10 s write phase, by py-spy).
    """
    seconds = _measured_seconds()
    state = {"read": True}
    app.connect("env-updated", lambda app, env: state.update(read=False))

    def weight(docname: str) -> float:
        if docname in seconds:
            return seconds[docname]
        try:
            return Path(app.env.doc2path(docname)).stat().st_size / 5000.0
        except OSError:
            return 0.0

    def make_chunks(docnames, nproc, maxbatch=10):
        if not state["read"]:
            return make_chunks_of_sphinx(docnames, nproc, maxbatch)
        logger.info(f"parallel_chapters: {len(docnames)} documents, {nproc} processes, heaviest first")
        ordered = sorted(docnames, key=weight, reverse=True)
        # Sphinx starts the first `nproc` tasks at once and then the waiting
        # ones last-added first, so the rest go in ascending order.
        return [[doc] for doc in ordered[:nproc] + ordered[nproc:][::-1]]

    return make_chunks


def _join_one_keep_going(self) -> bool:
    """``ParallelTasks._join_one`` of Sphinx 7.4 (pinned), save that a failed task does not raise.

    Its worker's message (the exception's first line: the chapter's path)
    and traceback are printed and kept in ``self.failed_tasks``, its log
    records are handled as a finished task's are, and the other tasks go
    on; :func:`_join_raising_at_the_end` raises once all have ended.
    """
    joined_any = False
    for tid, pipe in self._precvs.items():
        if pipe.poll():
            failed, logs, result = pipe.recv()
            for log in logs:
                logger.handle(log)
            if failed:
                message, trace = result
                sys.stderr.write(f"\nThe failing worker's traceback ({message}):\n{trace}\n")
                sys.stderr.flush()
                self.__dict__.setdefault("failed_tasks", []).append((message, trace))
                self._result_funcs.pop(tid)
                self._args.pop(tid)
            else:
                self._result_funcs.pop(tid)(self._args.pop(tid), result)
            self._procs[tid].join()
            self._precvs.pop(tid)
            self._pworking -= 1
            joined_any = True
            break
    while self._precvsWaiting and self._pworking < self.nproc:
        newtid, newprecv = self._precvsWaiting.popitem()
        self._precvs[newtid] = newprecv
        self._procs[newtid].start()
        self._pworking += 1
    return joined_any


_join_one_keep_going.keeps_going = True


def _join_raising_at_the_end(join):
    """``ParallelTasks.join`` that, once every task has ended, raises for all that failed."""

    def wrapped(self):
        join(self)
        failed = self.__dict__.get("failed_tasks", [])
        if failed:
            named = "\n".join(message for message, _ in failed)
            raise SphinxParallelError(
                f"{len(failed)} of the parallel tasks failed:\n{named}",
                "\n".join(trace for _, trace in failed),
            )

    wrapped.keeps_going = True
    return wrapped


class IPCKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel listens on Unix sockets named by a random token.

    The sockets are ``<tmp>/attnscale-kernel-<token>-<n>`` (an absolute
    path: the kernel runs in its chapter's folder, the client in the
    build's); jupyter_client removes them when the kernel shuts down.
    """

    @default("transport")
    def _ipc_transport(self) -> str:
        return "ipc"

    def format_kernel_cmd(self, extra_arguments=None):
        """The kernel's command; in a build with a zygote, the stub that forks it from the zygote."""
        command = super().format_kernel_cmd(extra_arguments)
        zygote = os.environ.get(KERNEL_ZYGOTE, "")
        if zygote and command[1:3] == ["-m", "ipykernel_launcher"]:
            return [sys.executable, str(ZYGOTE_PROGRAM), "kernel", zygote, *command[3:]]
        return command

    @default("ip")
    def _socket_prefix(self) -> str:
        return os.path.join(tempfile.gettempdir(), f"attnscale-kernel-{uuid.uuid4().hex[:16]}")


def _over_ipc(single_nb_execution):
    """MyST-NB's notebook execution, its kernels started by :class:`IPCKernelManager`."""

    def wrapped(notebook, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", IPCKernelManager)
        return single_nb_execution(notebook, *args, **kwargs)

    wrapped.starts_ipc_kernels = True
    return wrapped


#: glibc's allocator: keep freed memory in the process instead of returning
#: it to the system.  The chapters allocate and free arrays of tens of MB;
#: by default each one is a fresh mapping whose every page the kernel zeroes
#: on first touch (evidence-residual: 477k page faults, 0.9 s of system time;
#: with these, 55k and 0.2 s).  Only speed changes; other C libraries ignore them.
MALLOC_REUSE = {"MALLOC_MMAP_THRESHOLD_": str(2**32), "MALLOC_TRIM_THRESHOLD_": str(2**32)}

#: The folder of results shared by the chapters of one build
#: (``attnscale.support.shared.SHARED_RESULTS``; the extension does not import
#: the package, which the kernels load from the environment).
SHARED_RESULTS = "ATTNSCALE_SHARED_RESULTS"

#: The environment variable naming the zygote's socket (``kernel_zygote.py``), and that program.
KERNEL_ZYGOTE = "ATTNSCALE_KERNEL_ZYGOTE"
ZYGOTE_PROGRAM = Path(__file__).with_name("kernel_zygote.py")


#: The fewest chapters (``book/*.md``) for which the zygote pays: its imports cost about three
#: seconds of CPU, and a small book (the tests' probe books) saves less than that.
ZYGOTE_MIN_CHAPTERS = 12


def _start_zygote(app) -> None:
    """Start the process the build's kernels are forked from (``kernel_zygote.py``); stop it at the end.

    Only for a parallel read of a book of at least :data:`ZYGOTE_MIN_CHAPTERS`
    chapters, whose kernels have one BLAS thread each: the zygote must have
    a single thread when it forks.  It starts when the configuration is
    read, so that its imports overlap Sphinx's own start.  A stub that finds
    no zygote starts an ordinary kernel, so a zygote that fails to start or
    refuses only makes the build slower.  A user's own setting is kept (an
    empty one turns the zygote off).
    """
    chapters = len(list(Path(app.srcdir, "book").glob("*.md")))
    if KERNEL_ZYGOTE in os.environ or chapters < ZYGOTE_MIN_CHAPTERS:
        return
    logger.info(f"parallel_chapters: kernels forked from one process ({chapters} chapters)")
    path = os.path.join(tempfile.gettempdir(), f"attnscale-zygote-{uuid.uuid4().hex[:16]}")
    zygote = subprocess.Popen(
        [sys.executable, str(ZYGOTE_PROGRAM), "serve", path], stdin=subprocess.DEVNULL, env=os.environ.copy()
    )
    os.environ[KERNEL_ZYGOTE] = path

    def stop(app=None, exception=None):
        if zygote.poll() is None:
            zygote.terminate()
            try:
                zygote.wait(timeout=10)
            except subprocess.TimeoutExpired:
                zygote.kill()
        if os.environ.get(KERNEL_ZYGOTE) == path:
            del os.environ[KERNEL_ZYGOTE]
        with contextlib.suppress(OSError):
            os.unlink(path + ".refused")

    app.connect("build-finished", stop)
    atexit.register(stop)


#: JAX's persistent compilation cache, under the build's output folder.
JAX_CACHE = ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")


def _share_compiled_jax(app) -> None:
    """Let the kernels share JAX's compiled programs, within a build and across builds.

    The chapters that replay training steps spend most of their time
    compiling them (evidence-retrieval: 9.8 s of CPU cold, 4.2 s with the
    programs cached).  JAX keys each cached program on the program itself,
    the compiler's options and its own version, and it only saves the
    compiling: every number is computed afresh, so no result can be stale.
    A user's own setting is kept; ``jupyter-book clean`` removes the cache.
    """
    os.environ.setdefault(JAX_CACHE[0], str(Path(app.outdir).parent / ".jax-cache"))
    os.environ.setdefault(JAX_CACHE[1], "0")  # the default, 1 s, leaves most of the book's programs out


def _share_results(app) -> None:
    """Give the build's kernels one fresh folder for :func:`attnscale.support.shared.shared_result`.

    Two chapters that make the same computation (the training chapter and
    its evidence page train the same sweep) then make it once per build: the
    first kernel to ask computes, the other waits and reads.  The folder is
    new for every build and removed when the build ends, so nothing carries
    from one build to the next; a user's own setting is kept.
    """
    if os.environ.get(SHARED_RESULTS):
        return
    build_folder = Path(app.outdir).parent
    build_folder.mkdir(parents=True, exist_ok=True)
    folder = tempfile.mkdtemp(prefix=".shared-results-", dir=build_folder)
    os.environ[SHARED_RESULTS] = folder

    def remove(app, exception):
        shutil.rmtree(folder, ignore_errors=True)
        if os.environ.get(SHARED_RESULTS) == folder:
            del os.environ[SHARED_RESULTS]

    app.connect("build-finished", remove)


def _numref_reads_each_target_once(resolve):
    """``StandardDomain._resolve_numref_xref`` that unpickles each target chapter once per process.

    Sphinx 7.4 resolves every ``{numref}`` by unpickling the whole doctree
    of the chapter it points to, only to read the target node's type and
    ids; in the write phase that runs in the main process, in series (2.8 s
    of 73 references by py-spy).  The doctrees on disk do not change during
    the write and these lookups only read them, so each is unpickled once.
    """

    def resolve_reading_cached(self, env, *args, **kwargs):
        cache = env.__dict__.setdefault("_attnscale_numref_doctrees", {})
        load = env.get_doctree

        def cached(docname):
            if docname not in cache:
                cache[docname] = load(docname)
            return cache[docname]

        env.get_doctree = cached
        try:
            return resolve(self, env, *args, **kwargs)
        finally:
            del env.get_doctree  # the instance attribute: the method shows through again

    resolve_reading_cached.reads_each_target_once = True
    return resolve_reading_cached


def _configure(app, config):
    app.parallel = build_jobs()
    _share_compiled_jax(app)
    _share_results(app)
    for variable, value in MALLOC_REUSE.items():  # the kernels inherit them (a user's own kept)
        os.environ.setdefault(variable, value)
    if not getattr(StandardDomain._resolve_numref_xref, "reads_each_target_once", False):
        StandardDomain._resolve_numref_xref = _numref_reads_each_target_once(
            StandardDomain._resolve_numref_xref
        )
    if not getattr(myst_nb_direct.single_nb_execution, "starts_ipc_kernels", False):
        myst_nb_direct.single_nb_execution = _over_ipc(myst_nb_direct.single_nb_execution)
    for name in UNDECLARED_BUT_SAFE:
        extension = app.extensions.get(name)
        if extension is not None and extension.parallel_read_safe is None:
            extension.parallel_read_safe = True
    if app.parallel > 1:
        # Each kernel does its linear algebra on one thread: with more
        # kernels than cores, multithreaded BLAS in each spins against the
        # others' (a user's own setting is kept).
        for variable in BLAS_THREADS:
            os.environ.setdefault(variable, "1")
        _start_zygote(app)
        sphinx.builders.make_chunks = _heaviest_first(app, sphinx_make_chunks)
        if not getattr(ParallelTasks.join, "keeps_going", False):
            ParallelTasks._join_one = _join_one_keep_going
            ParallelTasks.join = _join_raising_at_the_end(ParallelTasks.join)


def setup(app):
    from sphinx_proof.domain import ProofDomain

    if "merge_domaindata" not in vars(ProofDomain):
        ProofDomain.merge_domaindata = lambda self, docnames, otherdata: None
    app.connect("config-inited", _configure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
