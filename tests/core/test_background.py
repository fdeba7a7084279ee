"""core.background: a function run in a daemon thread, its value or error handed back."""

from __future__ import annotations

import contextvars
import threading

import pytest

from rcp_data.core.background import Background

WHO = contextvars.ContextVar("who", default="nobody")


def test_value_thread_and_context_carried():
    WHO.set("caller")
    seen = {}

    def work(a: int, b: int) -> int:
        seen["thread"] = threading.current_thread()
        seen["who"] = WHO.get()
        WHO.set("worker")           # a copy of the context: the caller's stays
        return a * b

    job = Background(work, 6, 7, name="rcp-test")
    assert job.result() == 42
    assert seen["thread"] is not threading.main_thread()
    assert seen["thread"].daemon and seen["thread"].name == "rcp-test"
    assert seen["who"] == "caller"
    assert WHO.get() == "caller"


def test_error_raised_in_the_waiting_thread():
    def fail() -> None:
        raise KeyError("lost")

    job = Background(fail)
    job.wait()                      # waiting alone does not raise
    with pytest.raises(KeyError, match="lost"):
        job.result()


def test_runs_while_the_caller_works():
    started, go_on = threading.Event(), threading.Event()

    def work() -> str:
        started.set()
        assert go_on.wait(10)
        return "done"

    job = Background(work)
    assert started.wait(10)         # it started before the caller asked for the result
    go_on.set()
    assert job.result() == "done"
