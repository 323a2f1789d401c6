"""Where a release comes from: a checkout one folder deeper, zip and tar archives (unpacked safely),
and the official release fetched over real HTTP from a server on 127.0.0.1 serving an archive of a
sample (pinned revision, recorded hashes checked, cached, resumed, and what to do when offline)."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import shutil
import tarfile
import threading
import zipfile
from pathlib import Path

import huggingface_hub
import pytest

from t2ireason import build, releases
from t2ireason.benchmarks import OfficialRelease, ReleaseError, get_benchmark

R2I = get_benchmark("r2i-bench")
WGB = get_benchmark("worldgenbench")
REV = R2I.official_release.revision
SECRET = "hf_never_sent_to_github_0123456789"


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def tar_gz(files: dict[str, bytes], top: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def rows_of(out: Path) -> dict[str, list]:
    import pyarrow.parquet as pq

    return {p.parent.name: pq.read_table(p).to_pylist() for p in sorted(out.glob("*/test-*.parquet"))}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The sample built from its own folder: what every other way of giving it must give."""
    out = tmp_path_factory.mktemp("ref") / "hub"
    build.build_dataset(R2I, R2I.sample_path(), out, license="other")
    return rows_of(out)


# -- folders, checkouts, archives ---------------------------------------------------------------------


def test_a_checkout_one_folder_deeper_is_found_by_the_markers(tmp_path, reference):
    shutil.copytree(R2I.sample_path(), tmp_path / "clone" / "R2I-Bench-main")
    report = build.build_dataset(R2I, tmp_path / "clone", tmp_path / "out", license="other")
    assert report.source_info["kind"] == "checkout"
    assert report.source_info["root"].endswith("R2I-Bench-main")
    assert "R2I-Bench-main/, 1 folder(s) below" in report.summary()
    assert rows_of(tmp_path / "out") == reference
    assert report.ignored_files == ["README.md"]  # not data: reported, not read


def test_two_releases_in_one_folder_are_not_guessed(tmp_path):
    for name in ("a", "b"):
        shutil.copytree(R2I.sample_path(), tmp_path / "both" / name)
    with pytest.raises(ReleaseError, match="holds several releases"):
        build.build_dataset(R2I, tmp_path / "both", tmp_path / "out", license="other")


@pytest.mark.parametrize("kind", ["zip", "tar.gz", "tar"])
def test_archives_of_the_repository(tmp_path, reference, kind):
    files = tree(R2I.sample_path())
    files["evaluation.py"] = b"print('the authors scoring script')\n"
    archive = tmp_path / f"R2I-Bench.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in files.items():
                z.writestr(f"R2I-Bench-main/{name}", data)
    else:
        buf = io.BytesIO(tar_gz(files, "R2I-Bench-main"))
        if kind == "tar":
            import gzip

            buf = io.BytesIO(gzip.decompress(buf.getvalue()))
        archive.write_bytes(buf.getvalue())
    report = build.build_dataset(R2I, archive, tmp_path / "out", license="other")
    assert report.source_info["kind"] == "archive" and report.source == str(archive)
    assert rows_of(tmp_path / "out") == reference
    assert sorted(report.ignored_files) == ["README.md", "evaluation.py"]
    assert report.authors_scripts == ["evaluation.py"]  # one of R2I-Bench's official_release.scripts
    assert "the authors' scripts, not read: evaluation.py" in report.summary()
    assert "1 other file(s) of the release not read (not data): README.md" in report.summary()
    assert any("unpacked the archive" in n for n in report.source_info["notes"])
    assert not Path(report.source_info["root"]).exists()  # the temporary folder is gone


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


@pytest.mark.parametrize("name", ["../escape.txt", "a/../../escape.txt", "/etc/escape.txt", "C:/escape.txt"])
def test_archive_members_leaving_the_folder_are_refused(tmp_path, name):
    archive = _zip(tmp_path / "evil.zip", {"R2I-Bench/data/prompts/x.csv": b"Prompt,id\n", name: b"gotcha"})
    with pytest.raises(releases.ArchiveError, match="outside the folder"):
        releases.unpack(archive, tmp_path / "dest")
    assert not (tmp_path / "escape.txt").exists() and not list(tmp_path.rglob("escape.txt"))


def test_tar_links_and_devices_are_skipped(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        data = b"Prompt,id\n"
        info = tarfile.TarInfo("rel/data.csv")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("rel/passwd")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(link)
        fifo = tarfile.TarInfo("rel/pipe")
        fifo.type = tarfile.FIFOTYPE
        t.addfile(fifo)
    (tmp_path / "a.tar").write_bytes(buf.getvalue())
    notes = releases.unpack(tmp_path / "a.tar", tmp_path / "dest")
    assert tree(tmp_path / "dest") == {"rel/data.csv": b"Prompt,id\n"}
    assert "rel/passwd (a link)" in notes[0] and "rel/pipe (not a regular file)" in notes[0]


def test_bombs_are_refused(tmp_path):
    archive = _zip(tmp_path / "bomb.zip", {"rel/zeros.csv": b"0" * (24 * 1024**2)})  # ~24 MB from a few KB
    assert archive.stat().st_size < 100_000
    with pytest.raises(releases.ArchiveError, match="decompression bomb"):
        build.build_dataset(R2I, archive, tmp_path / "out", license="other")
    many = _zip(tmp_path / "many.zip", {f"f{i}.csv": b"x" for i in range(30)})
    with pytest.raises(releases.ArchiveError, match="30 members, more than the 20 allowed"):
        releases.unpack(many, tmp_path / "d1", {"max_members": 20})
    with pytest.raises(releases.ArchiveError, match="more than the 10 allowed"):
        releases.unpack(many, tmp_path / "d2", {"max_bytes": 10})
    (tmp_path / "broken.zip").write_bytes(archive.read_bytes()[:200])
    with pytest.raises(ReleaseError):
        build.build_dataset(R2I, tmp_path / "broken.zip", tmp_path / "out", license="other")


# -- fetching the official release over HTTP -----------------------------------------------------------


class ArchiveServer:
    """A static file server on 127.0.0.1 that honours Range requests and records what it was asked."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.requests: list[dict] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                server.requests.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
                data = server.files.get(self.path)
                if data is None:
                    self.send_error(404)
                    return
                start = 0
                if self.headers.get("Range", "").startswith("bytes="):
                    start = int(self.headers["Range"][6:].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                self.wfile.write(data[start:])

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def github(monkeypatch, tmp_path):
    """The GitHub archive URL pointed at a local server serving the sample at the pinned revision, whose
    recorded hashes are then the sample's; HTTP allowed (the Hub stays out of reach: nothing here goes to it)."""
    _sample_as_the_pinned_release(monkeypatch)
    server = ArchiveServer()
    server.files[f"/PLUM-Lab/R2I-Bench/tar.gz/{REV}"] = tar_gz(tree(R2I.sample_path()), f"R2I-Bench-{REV}")
    monkeypatch.setenv("T2IREASON_GITHUB_ARCHIVE_URL", server.base + "/{repo}/tar.gz/{revision}")
    monkeypatch.setenv("T2IREASON_RELEASES_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", SECRET)
    yield server
    server.close()


def _hashes(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in tree(folder).items() if name.startswith("data/")}


def _sample_as_the_pinned_release(monkeypatch, files: dict[str, str] | None = None) -> None:
    monkeypatch.setattr(R2I, "official_release", OfficialRelease(
        kind="github", repo="PLUM-Lab/R2I-Bench", revision=REV,
        files=_hashes(R2I.sample_path()) if files is None else files))


def test_build_with_no_source_fetches_the_pinned_release_and_checks_it(github, monkeypatch, tmp_path, reference):
    monkeypatch.setattr(R2I, "official_release", OfficialRelease(
        kind="github", repo="PLUM-Lab/R2I-Bench", revision=REV, files=_hashes(R2I.sample_path())))
    report = build.build_dataset("r2i-bench", None, tmp_path / "out", license="other")
    assert rows_of(tmp_path / "out") == reference
    info = report.source_info
    assert (info["kind"], info["revision"]) == ("github", REV)
    assert info["given"] == f"{github.base}/PLUM-Lab/R2I-Bench/tar.gz/{REV}"
    assert info["verification"]["enforced"] and info["verification"]["mismatched"] == []
    assert len(info["verification"]["verified"]) == 17
    assert "files: all 17 recorded files match revision" in report.summary()
    assert [r["path"] for r in github.requests] == [f"/PLUM-Lab/R2I-Bench/tar.gz/{REV}"]
    assert all(SECRET not in json.dumps(r) and "authorization" not in r for r in github.requests)
    card = (tmp_path / "out" / "README.md").read_text()
    assert f"(revision {REV})" in card and "all 17 recorded files match" in card

    # the second build uses the cached release: nothing is downloaded again
    again = build.build_dataset("r2i-bench", None, tmp_path / "again", license="other")
    assert len(github.requests) == 1 and any("cached" in n for n in again.source_info["notes"])


def test_an_interrupted_download_is_resumed(github, tmp_path):
    archive = github.files[f"/PLUM-Lab/R2I-Bench/tar.gz/{REV}"]
    part = tmp_path / "cache" / "downloads" / f"PLUM-Lab--R2I-Bench-{REV}.tar.gz.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(archive[: len(archive) // 2])  # what a killed download left
    report = build.build_dataset("r2i-bench", None, tmp_path / "out", license="other")
    assert report.configs["all"]["rows"] == 15
    [request] = github.requests
    assert request["range"] == f"bytes={len(archive) // 2}-"
    assert (tmp_path / "cache" / "downloads" / f"PLUM-Lab--R2I-Bench-{REV}.tar.gz").read_bytes() == archive
    assert not part.exists()


def test_files_that_differ_from_the_recorded_hashes(github, monkeypatch, tmp_path):
    hashes = _hashes(R2I.sample_path())
    hashes["data/prompts/logical/logical_disjunctive.csv"] = "0" * 64
    monkeypatch.setattr(R2I, "official_release", OfficialRelease(
        kind="github", repo="PLUM-Lab/R2I-Bench", revision=REV, files=hashes))
    with pytest.raises(ReleaseError, match=r"1 differ \(data/prompts/logical/logical_disjunctive.csv\)"):
        build.build_dataset("r2i-bench", None, tmp_path / "out", license="other")
    assert not (tmp_path / "out").exists()

    # another revision: its files are reported against the recorded ones, not enforced
    other = "1" * 40
    github.files[f"/PLUM-Lab/R2I-Bench/tar.gz/{other}"] = github.files[f"/PLUM-Lab/R2I-Bench/tar.gz/{REV}"]
    report = build.build_dataset("r2i-bench", None, tmp_path / "other", license="other", revision=other)
    v = report.source_info["verification"]
    assert not v["enforced"] and v["mismatched"] == ["data/prompts/logical/logical_disjunctive.csv"]
    assert report.source_info["revision"] == other and "not the recorded files" in report.summary()


def test_no_recorded_hashes_is_said_not_hidden(github, monkeypatch, tmp_path):
    _sample_as_the_pinned_release(monkeypatch, files={})
    report = build.build_dataset("r2i-bench", None, tmp_path / "out", license="other")
    assert report.source_info["verification"]["recorded"] == 0
    assert "the project records no file hashes for this release" in report.summary()


def test_offline_the_error_says_what_to_download_and_where(monkeypatch, tmp_path, capsys, reference):
    monkeypatch.setenv("T2IREASON_RELEASES_CACHE", str(tmp_path / "cache"))  # HF_HUB_OFFLINE=1, as in every test
    _sample_as_the_pinned_release(monkeypatch)
    from t2ireason import cli

    code = cli.main(["build", "r2i-bench", "--out", str(tmp_path / "out"), "--license", "other"])
    err = capsys.readouterr().err
    target = tmp_path / "cache" / "downloads" / f"PLUM-Lab--R2I-Bench-{REV}.tar.gz"
    assert code == 2 and err.startswith("error: cannot fetch the R2I-Bench release: OfflineModeIsEnabled")
    assert f"Download https://codeload.github.com/PLUM-Lab/R2I-Bench/tar.gz/{REV}" in err
    assert str(target) in err and "--source" in err and f"checkout {REV}" in err
    assert not (tmp_path / "out").exists()

    # doing what it says works, still offline
    target.write_bytes(tar_gz(tree(R2I.sample_path()), f"R2I-Bench-{REV}"))
    assert cli.main(["build", "r2i-bench", "--out", str(tmp_path / "out"), "--license", "other"]) == 0
    assert rows_of(tmp_path / "out") == reference
    assert "used the archive already downloaded" in capsys.readouterr().out


def test_revision_and_source_do_not_mix(tmp_path):
    with pytest.raises(ReleaseError, match="cannot be combined with --source"):
        build.build_dataset(R2I, R2I.sample_path(), tmp_path / "out", license="other", revision="abc")


def test_hub_releases_come_through_snapshot_download(monkeypatch, tmp_path):
    calls = []

    def snapshot_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs))
        folder = tmp_path / "snapshot"
        if not folder.exists():
            shutil.copytree(WGB.sample_path(), folder)
        return str(folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    report = build.build_dataset("worldgenbench", None, tmp_path / "out")
    assert calls == [("worldrl/WorldGenBench", {"repo_type": "dataset", "revision": "main"})]
    info = report.source_info
    assert (info["kind"], info["given"], info["revision"]) == ("hub", "worldrl/WorldGenBench", "main")
    assert any("'main' is not a commit" in n for n in info["notes"])
    assert report.configs["humanities"]["rows"] == 7 and report.ignored_files == ["README.md"]


def test_hub_offline_says_what_to_download(tmp_path):
    with pytest.raises(releases.ReleaseUnavailable) as info:
        build.build_dataset("worldgenbench", None, tmp_path / "out")
    message = str(info.value)
    assert "hf download worldrl/WorldGenBench --repo-type dataset --revision main" in message
    assert "--source" in message


def test_benchmarks_without_an_official_release(tmp_path):
    with pytest.raises(ReleaseError, match="no official release the project can fetch"):
        build.build_dataset("mt2ie", None, tmp_path / "out")


@pytest.mark.parametrize("bench, links", [
    (R2I, ["data/evaluation", "data/prompts"]),
    (get_benchmark("t2i-reasonbench"), ["deepseek_evaluation_qs", "pipeline_prompts", "prompts"]),
])
def test_a_release_made_of_outside_links_names_them_not_a_temporary_folder(tmp_path, bench, links):
    """Issue 35.10: a release folder whose files are all links leading out of it failed naming the temporary
    view the readers see (/tmp/t2ireason-release-view-...): the error names the folder given and the links."""
    outside = tmp_path / "outside"
    shutil.copytree(bench.sample_path(), outside)
    release = tmp_path / "release"
    for link in links:
        (release / link).parent.mkdir(parents=True, exist_ok=True)
        (release / link).symlink_to(outside / link, target_is_directory=True)
    with pytest.raises(ReleaseError) as info:
        build.build_dataset(bench, release, tmp_path / "out", license="other")
    message = str(info.value)
    assert message.startswith(str(release)) or f" {release}" in message, message
    assert "t2ireason-release-view" not in message and str(outside) not in message
    assert f"its link(s) leading out of the release folder are never read: {', '.join(links)}" in message
    assert not (tmp_path / "out").exists()


def test_links_leading_out_of_the_release_are_never_read(tmp_path):
    """As found: a release's symlinks were followed out of its folder: an outside file was built into the
    dataset and /etc/passwd's text reached build_report.json (quarantined raw), listed for upload. Now
    each such link is an ``outside_link`` anomaly and nothing outside the folder is read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "more.jsonl").write_text(json.dumps({"idx": "x1", "Prompt": f"a prompt from outside {SECRET}",
                                                    "items": ["one"], "explanations": ["e"]}) + "\n")
    (outside / "passwd.json").write_text(f"root:x:0:0:{SECRET}:/root:/bin/bash\n")
    (outside / "deeper").mkdir()
    (outside / "deeper" / "nested.json").write_text((outside / "more.jsonl").read_text())
    release = tmp_path / "release"
    shutil.copytree(WGB.sample_path(), release)
    (release / "more.jsonl").symlink_to(outside / "more.jsonl")
    (release / "notes.json").symlink_to(outside / "passwd.json")
    (release / "folder").symlink_to(outside / "deeper", target_is_directory=True)
    (release / "same.jsonl").symlink_to(release / "nature.jsonl")  # inside the folder: read as any file
    assert releases.outside_links(release) == ["folder", "more.jsonl", "notes.json"]

    report = build.build_dataset(WGB, release, tmp_path / "out", license="other")
    assert {(a["kind"], a["file"]) for a in report.anomalies if a["kind"] == "outside_link"} == {
        ("outside_link", "folder"), ("outside_link", "more.jsonl"), ("outside_link", "notes.json")}
    assert "link(s) leading out of the release folder left unread" in report.summary()
    for path, data in tree(tmp_path / "out").items():
        assert SECRET.encode() not in data and str(outside).encode() not in data, path
    nature = [r["id"] for r in rows_of(tmp_path / "out")["nature"]]
    released = len((WGB.sample_path() / "nature.jsonl").read_text().splitlines())
    assert "x1" not in nature and len(nature) == 2 * released  # the inside link was read as any file: rows twice
    assert (release / "notes.json").is_symlink()  # the release itself is left as it was


def test_a_release_without_recorded_hashes_is_reported_not_checked(tmp_path):
    """Issue 52: WorldGenBench's release has no recorded hashes, so a stand-in in its layout read as the real one.
    The build says `release not checked` (report, summary, card) and a run built from it records it."""
    from huggingface_hub import DatasetCard

    from t2ireason.runs import Run

    assert not WGB.official_release.files
    report = build.build_dataset("worldgenbench", WGB.sample_path(), tmp_path / "out")
    assert report.release_check == "not checked"
    assert report.to_dict()["release_check"] == "not checked"
    assert report.source_info["verification"]["note"].startswith("release not checked: ")
    assert "  files: release not checked: the project records no file hashes" in report.summary()
    assert "release not checked" in DatasetCard.load(tmp_path / "out" / "README.md").text
    run = Run.create(tmp_path / "run", "worldgenbench", data=tmp_path / "run" / "data")
    run.build(WGB.sample_path())
    assert run.manifest["build"]["release_check"] == "not checked"


def test_the_release_check_says_checked_modified_or_other_files(tmp_path, monkeypatch):
    """With recorded hashes: every file matches (checked), some differ (modified: the release, edited), or none
    match (other files: another revision or writing of the layout, such as the samples)."""
    hashes = _hashes(R2I.sample_path())
    monkeypatch.setattr(R2I, "official_release", OfficialRelease(
        kind="github", repo="PLUM-Lab/R2I-Bench", revision=REV, files=hashes))
    assert build.build_dataset("r2i-bench", R2I.sample_path(), tmp_path / "a", license="other").release_check == "checked"
    edited = tmp_path / "edited"
    shutil.copytree(R2I.sample_path(), edited)
    first = next(iter(hashes))
    (edited / first).write_bytes((edited / first).read_bytes() + b"\n")
    assert build.build_dataset("r2i-bench", edited, tmp_path / "b", license="other").release_check == "modified"
    monkeypatch.setattr(R2I, "official_release", OfficialRelease(
        kind="github", repo="PLUM-Lab/R2I-Bench", revision=REV, files={k: "0" * 64 for k in hashes}))
    assert build.build_dataset("r2i-bench", R2I.sample_path(), tmp_path / "c", license="other").release_check == \
        "other files"
