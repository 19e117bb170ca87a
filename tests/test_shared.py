"""attnscale.support.shared: one computation shared by the chapters of a build."""

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from bookbuild import load_extension

from attnscale.support import shared
from attnscale.support.shared import SHARED_RESULTS, shared_result

CALLS = []


def counted(value, pause=0.0):
    """Record the call, wait ``pause`` seconds, return ``value`` squared."""
    CALLS.append(value)
    time.sleep(pause)
    return np.asarray(value) ** 2


def failing(value):
    CALLS.append(value)
    raise RuntimeError("no result")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    CALLS.clear()
    monkeypatch.setenv(SHARED_RESULTS, str(tmp_path))
    return tmp_path


def test_without_the_folder_every_call_computes(monkeypatch):
    CALLS.clear()
    monkeypatch.delenv(SHARED_RESULTS, raising=False)
    for _ in range(2):
        assert shared_result(counted, value=3) == 9
    assert CALLS == [3, 3]


def test_a_second_call_reads_the_first_result(folder):
    first = shared_result(counted, value=np.arange(4))
    second = shared_result(counted, value=np.arange(4))
    np.testing.assert_array_equal(first, second)
    assert len(CALLS) == 1  # computed once
    assert len(list(folder.glob("*.pickle"))) == 1


def test_other_arguments_or_other_code_compute_again(folder, monkeypatch):
    shared_result(counted, value=2)
    shared_result(counted, value=3)  # other arguments
    monkeypatch.setattr(shared, "_source_digest", lambda: "other code")
    shared_result(counted, value=2)  # the same arguments, another package source
    assert CALLS == [2, 3, 2]


def test_a_failing_computation_stores_nothing(folder):
    for _ in range(2):
        with pytest.raises(RuntimeError, match="no result"):
            shared_result(failing, value=1)
    assert CALLS == [1, 1]
    assert not list(folder.glob("*.pickle"))


def test_a_second_kernel_waits_for_the_first(folder):
    """Two callers at once (separate open files, as two kernels have): one computes, one reads."""
    results = []

    def call():
        results.append(shared_result(counted, value=5, pause=0.5))

    threads = [threading.Thread(target=call) for _ in range(2)]
    threads[0].start()
    time.sleep(0.1)
    threads[1].start()
    for thread in threads:
        thread.join()
    assert results == [25, 25]
    assert CALLS == [5]


def test_compute_must_be_callable(folder):
    with pytest.raises(TypeError, match="compute must be callable"):
        shared_result(3, value=1)


def test_the_build_names_the_same_variable_and_removes_its_folder(tmp_path, monkeypatch):
    """The extension does not import the package: its copy of the name must agree."""
    extension = load_extension("parallel_chapters")
    assert extension.SHARED_RESULTS == SHARED_RESULTS
    monkeypatch.delenv(SHARED_RESULTS, raising=False)
    connected = {}

    class App:
        outdir = str(tmp_path / "_build" / "html")

        def connect(self, event, handler):
            connected[event] = handler

    extension._share_results(App())
    made = Path(os.environ[SHARED_RESULTS])
    assert made.is_dir() and made.parent == tmp_path / "_build"
    connected["build-finished"](App(), None)
    assert not made.exists()
    assert SHARED_RESULTS not in os.environ
