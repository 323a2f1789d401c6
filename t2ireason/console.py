"""What a command does with its process: SIGTERM (how Slurm and Kubernetes stop a job) taken as Ctrl-C, so
finished work is kept and the command says how to resume; a reader of stdout that goes away (``| head``)
stopping no work."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Terminated", "sigterm_as_interrupt", "stdout_reader_may_leave"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, how Slurm and Kubernetes stop a job: handled as Ctrl-C is (finished work kept)."""


def _terminate(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raised as :class:`Terminated` in the main thread while a command runs."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers live in the main thread
        yield
        return
    before = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


class _StdoutReaderMayLeave:
    """``sys.stdout`` while a command runs. When its reader goes away (``t2ireason build ... | head``),
    what is left to print goes to the null device and the command finishes its work with the exit
    status of that work: no traceback and no error for output that nobody reads any more."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_null()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_null()

    def _to_null(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self._stream.fileno())  # the stream's buffer and every later write go there
        os.close(null)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def stdout_reader_may_leave() -> Iterator[None]:
    """Within it, a closed pipe on stdout (see :class:`_StdoutReaderMayLeave`) stops no work."""
    stdout = sys.stdout
    sys.stdout = _StdoutReaderMayLeave(stdout)
    try:
        yield
    finally:
        sys.stdout.flush()  # what is still buffered, while a closed pipe is still caught
        sys.stdout = stdout
