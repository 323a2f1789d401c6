"""Folders written whole or not at all (t2ireason.files.atomic_folder: built datasets, unpacked releases)."""

import pytest

from t2ireason.files import atomic_folder


def test_a_folder_replaces_the_old_one_only_when_written_whole(tmp_path):
    out = tmp_path / "dataset"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic_folder(out) as tmp:
        (tmp / "new.txt").write_text("half")
        raise RuntimeError("killed mid-write")
    assert [p.name for p in tmp_path.iterdir()] == ["dataset"]  # no hidden temporary folder left
    assert [p.name for p in out.iterdir()] == ["old.txt"]
    with atomic_folder(out) as tmp:
        assert tmp.parent == out.parent and not any(tmp.iterdir())
        (tmp / "new.txt").write_text("whole")
    assert [p.name for p in tmp_path.iterdir()] == ["dataset"]
    assert [p.name for p in out.iterdir()] == ["new.txt"]


def test_parquet_rows_are_read_through_the_system_allocator(tmp_path, monkeypatch):
    """Issue 51: Arrow's default allocator (mimalloc) kept the pages a read of the run's rows used, about 16 KB a
    row for the rest of an evaluation; the rows are read through the system allocator, which gives them back."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from t2ireason.files import read_parquet_rows

    path = tmp_path / "rows.parquet"
    rows = [{"id": f"p{i}", "questions": [{"q": "Is it red?" * 20, "w": 1.5}] * 3, "n": i} for i in range(300)]
    pq.write_table(pa.Table.from_pylist(rows), path)
    system = pa.proxy_memory_pool(pa.system_memory_pool())  # the system allocator, its own count
    monkeypatch.setattr(pa, "system_memory_pool", lambda: system)
    assert read_parquet_rows(path) == rows
    assert system.max_memory() > 100_000  # the read's buffers came from it
    assert read_parquet_rows(path, ["n"]) == [{"n": i} for i in range(300)]


def test_records_are_read_one_at_a_time_and_a_damaged_line_is_named(tmp_path):
    """Issue 51: the end of an evaluation reads results.jsonl a record at a time (never the file's every record at
    once); a line that is not a record is an error naming the file and the line."""
    from t2ireason.files import iter_records

    path = tmp_path / "results.jsonl"
    path.write_text('{"key": "a"}\n{"key": "b"}\nnot json\n{"key": "c"}\n')
    records = iter_records(path)
    assert next(records) == {"key": "a"} and next(records) == {"key": "b"}  # before the damaged line is read
    with pytest.raises(ValueError, match="results.jsonl, line 3, is not a JSON record"):
        next(records)
