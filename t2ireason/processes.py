"""The processes of a launch: ``torchrun`` or ``accelerate launch`` of a command, or one plain process.

Judging costs more than anything else an evaluation does, so a launch on several devices splits it as
generation is split: each process takes its share of the work with accelerate's
``PartialState.split_between_processes`` and loads its judge once, on its own device
(``PartialState().device``); one process (the main one) does what must be done once (take the evaluation's
lock, merge the shares, write the scores) and the others learn its outcome through accelerate's collective
operations (``broadcast_object_list``, ``gather_object``). A plain process is a launch of one: nothing is
imported for it (``t2ireason evaluate`` with an HTTP judge needs neither torch nor accelerate).

A launch is told by the launcher's environment (``WORLD_SIZE`` above 1, set by torchrun and by
``accelerate launch`` on several processes). On CPU the state is made with ``cpu=True`` (accelerate's rule:
a plain ``PartialState()`` there sees no distribution). The processes talk over gloo whatever the device
(they exchange a few small objects; NCCL would refuse two processes on one GPU), and each takes the GPU
accelerate gives it (the local rank modulo the GPUs seen: two processes on one GPU share it). When one
process of a launch fails, torchrun ends the others (its elastic agent stops the whole group), so no process
waits for a failed one.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

__all__ = ["Processes", "processes", "launched", "first_to_fail"]

T = TypeVar("T")


def launched() -> bool:
    """Whether this process is one of several started by a launcher (torchrun, accelerate launch)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1")) > 1
    except ValueError:
        return False


def first_to_fail() -> bool:
    """Whether this process, ending with an error, is the first of its launch to (on its machine) and so the one
    that says it: an error every process meets (a bad input, a lock refused to the launch) is said once, not once a
    process, and the processes that torchrun stops after the first one failed (or whose peer left them waiting)
    say nothing more. A plain process is always the first. The first one claims a file named after the launch (its
    launcher's process, rendezvous and restart) in the temporary folder; the others find it there."""
    if not launched():
        return True
    import hashlib
    import tempfile

    launch = "\x1f".join([str(os.getppid()), *(os.environ.get(k, "") for k in (
        "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "GROUP_RANK"))])
    path = os.path.join(tempfile.gettempdir(),
                        f"t2ireason-launch-{hashlib.sha256(launch.encode()).hexdigest()[:16]}.failed")
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:  # no temporary folder to write to: better said twice than not at all
        return True
    return True


class Processes:
    """This process among those of its launch: ``rank`` (0 is the main one), ``count``, ``device``, and what
    they do together. A plain process is ``Processes()``: rank 0 of 1, every operation a no-op."""

    def __init__(self, state: Any = None):
        self.state = state

    @property
    def rank(self) -> int:
        return 0 if self.state is None else self.state.process_index

    @property
    def count(self) -> int:
        return 1 if self.state is None else self.state.num_processes

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def device(self) -> str | None:
        """This process's device in a launch (``cuda:1``, ``cpu``); None for a plain process (the judge's own
        default then)."""
        if self.state is None:
            return None
        device = self.state.device
        return "cpu" if device.type == "cpu" else str(device)

    def barrier(self) -> None:
        """Wait until every process of the launch is here."""
        if self.state is not None:
            self.state.wait_for_everyone()

    def share(self, items: Sequence[T]) -> list[T]:
        """This process's share of ``items``: contiguous blocks, in order, the first processes taking one more
        when they do not divide evenly (accelerate's ``split_between_processes``)."""
        if self.state is None:
            return list(items)
        with self.state.split_between_processes(list(items)) as mine:
            return list(mine)

    def gather(self, value: Any) -> list[Any]:
        """``value`` of every process, by rank (every process gets the list)."""
        if self.state is None:
            return [value]
        from accelerate.utils import gather_object

        return list(gather_object([value]))

    def broadcast(self, value: Any) -> Any:
        """The main process's ``value``, in every process."""
        if self.state is None:
            return value
        from accelerate.utils import broadcast_object_list

        box = [value]
        broadcast_object_list(box, from_process=0)
        return box[0]

    @contextmanager
    def main_holds(self, held: AbstractContextManager) -> Iterator[None]:
        """``held`` (a lock: a context manager whose entering may fail) entered by the main process alone, for
        the whole launch; the others wait for the outcome and fail with the same error when it fails, so that
        a lock refused to the launch is refused to each of its processes, and one held by the launch is taken
        once (the processes of one launch cooperate; another launch is refused)."""
        if self.state is None:
            with held:
                yield
            return
        error: BaseException | None = None
        if self.is_main:
            try:
                held.__enter__()
            except Exception as e:  # told to every process below, raised in each
                error = e
        error = self.broadcast(error)
        if error is not None:
            raise error
        if not self.is_main:
            yield
            return
        try:
            yield
        except BaseException as e:
            if not held.__exit__(type(e), e, e.__traceback__):
                raise
        else:
            held.__exit__(None, None, None)


_launch: Processes | None = None


def processes() -> Processes:
    """This process's place in its launch (made once per process; a plain process when not launched)."""
    global _launch
    if _launch is None:
        if not launched():
            return Processes()
        import torch
        from accelerate import PartialState

        # gloo: the processes exchange only small objects (the lock's outcome, each share's counts), and NCCL
        # refuses two processes on one GPU, a launch that judging with a small model on one GPU makes worthwhile
        _launch = Processes(PartialState(cpu=not torch.cuda.is_available(), backend="gloo"))
        atexit.register(_close_launch)
    return _launch


def _close_launch() -> None:
    """The process group torn down before the interpreter is: left to the interpreter's end, gloo's threads were
    destroyed still joinable now and then ("terminate called without an active exception", the process aborted
    after its work was done, and the launch counted as failed)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
