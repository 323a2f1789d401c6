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
