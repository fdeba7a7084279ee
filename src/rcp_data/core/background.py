"""One function run in a background thread while the caller works on."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """``fn(*args)`` started at once in a daemon thread, in a copy of the caller's context
    (context variables such as :func:`rcp_data.core.io.shared_reads` carry over); :meth:`result`
    waits for it and returns its value or raises what it raised. A daemon thread: an
    interrupted command exits without waiting for it."""

    def __init__(self, fn: Callable[..., T], *args: object, name: str = "rcp-background"
                 ) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._run, fn, *args),
                                        name=name, daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., T], *args: object) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # handed to the waiting thread by result()
            self._error = exc

    def wait(self) -> None:
        """Wait for the function to return or raise."""
        self._thread.join()

    def result(self) -> T:
        """The function's value, once it returns; what it raised, raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


__all__ = ["Background"]
