"""What a command does with its process: SIGTERM (how Slurm and Kubernetes stop a job) taken as Ctrl-C, so
finished work is kept and the command says how to resume; a reader of stdout that goes away (``| head``)
stopping no work; a mistake on its command line, or a user's error, said in one line (:class:`Parser`,
:func:`user_error_text`). At the bottom of the layers: the command line, the scripts and the metric Spaces use
it alike."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Terminated", "sigterm_as_interrupt", "stdout_reader_may_leave", "Parser", "user_error_text", "TICK",
           "result_of", "next_from"]


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


#: seconds a thread waits at a time for another's work: a signal (Ctrl-C, SIGTERM) the kernel delivered to another
#: of the process's threads does not wake the main thread blocked on a lock, and Python raises it there only at its
#: next wake-up; waits that may last are made of such ticks, so an interruption is raised within one
TICK = 0.5


def result_of(future: Any) -> Any:
    """``future.result()`` (a ``concurrent.futures.Future``), waited for a :data:`TICK` at a time."""
    import concurrent.futures

    while True:
        try:
            return future.result(timeout=TICK)
        except concurrent.futures.TimeoutError:
            continue


def next_from(items: Any) -> Any:
    """``items.get()`` (a ``queue.Queue``), waited for a :data:`TICK` at a time."""
    import queue

    while True:
        try:
            return items.get(timeout=TICK)
        except queue.Empty:
            continue


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


class Parser(argparse.ArgumentParser):
    """A mistake on the command line is one line naming it (an unknown option by its name, with the
    closest known one), not the whole usage: ``--help`` lists the options. An option is spelt out
    whole (``allow_abbrev=False``): a truncated ``--judge-kwarg`` is an unknown option, not silently
    another. Subcommands' parsers are of this class too."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)  # what this (sub)command was given
        return super().parse_known_args(args, namespace)

    def parse_args(self, args=None, namespace=None):
        args, extras = self.parse_known_args(args, namespace)
        if extras:  # a subcommand hands what it did not know back up: its own parser names it
            self._chosen(args).error(f"unrecognized arguments: {' '.join(extras)}")
        return args

    def _chosen(self, namespace: argparse.Namespace) -> Parser:
        """The innermost (sub)command's parser that ``namespace`` was parsed by."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(namespace, action.dest, None))
                if isinstance(chosen, Parser):
                    return chosen._chosen(namespace)
        return self

    def error(self, message: str):
        from .processes import first_to_fail

        unknown = self._unknown_option()
        # in a launch every process parses the same line: one says what is wrong with it
        self.exit(2, f"{self.prog}: error: {unknown or message} (options: {self.prog} --help)\n" if first_to_fail()
                  else None)

    def _unknown_option(self) -> str | None:
        """The first ``--option`` given that this command does not take (argparse names a missing
        required option first, and a misspelt one not at all), with the closest known one."""
        import difflib

        if any(isinstance(a, argparse._SubParsersAction) for a in self._actions):
            return None  # the subcommand's own parser judges its options
        known = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
        for token in getattr(self, "_given", []):
            if token == "--":
                break
            option = token.split("=", 1)[0]
            if option.startswith("--") and option not in known:
                # compared without the dashes every option shares, which would make any two look alike
                close = difflib.get_close_matches(option[2:], [k[2:] for k in known], n=1, cutoff=0.6)
                return f"unknown option {option}" + (f" (did you mean --{close[0]}?)" if close else "")
        return None


def _is_user_error(e: BaseException) -> bool:
    """Bad input, a missing file, a missing optional extra, an unusable judge: one ``error:`` line."""
    if isinstance(e, (ValueError, KeyError, OSError, ImportError)):
        return True
    base = sys.modules.get("t2ireason.judges.base")  # loaded whenever a JudgeError can exist
    return base is not None and isinstance(e, base.JudgeError)


def user_error_text(e: BaseException) -> str | None:
    """The one line a user is shown for a mistake of theirs or an unusable judge (the project's
    own clear messages), or None for anything else (a bug: its traceback is wanted). The command
    line and the metric Spaces both show errors through it."""
    if not _is_user_error(e):
        return None
    message = e.args[0] if isinstance(e, KeyError) and e.args else e
    return " ".join(str(message).split())
