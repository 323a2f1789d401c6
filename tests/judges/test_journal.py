"""An evaluation's reply journal used by several chunks at once (the rolling window's threads): every reply
it answers is counted, and each is given once."""

from __future__ import annotations

import sys
import threading

from t2ireason.judges import ChatRequest, user
from t2ireason.judges.journal import JournaledJudge, ReplyJournal
from t2ireason.judges.scripted import ScriptedJudge


def test_replies_taken_from_the_journal_by_several_threads_are_all_counted(tmp_path):
    requests = [ChatRequest(messages=[user(f"question {n}")]) for n in range(4000)]
    first = JournaledJudge(ScriptedJudge(lambda r: "yes"), ReplyJournal(tmp_path / "replies.jsonl"))
    first.chat(requests)  # every reply journaled, as an interrupted evaluation leaves them
    resumed = JournaledJudge(ScriptedJudge([]), ReplyJournal(tmp_path / "replies.jsonl"))  # asks nothing
    threads = [threading.Thread(target=lambda part=part: [resumed.chat([r]) for r in part])
               for part in (requests[n::8] for n in range(8))]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads taking turns as often as they can: a lost update would show
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert resumed.reused == len(requests) and len(resumed.journal) == 0
