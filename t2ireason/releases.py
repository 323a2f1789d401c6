"""Where a benchmark's release comes from, before its reader sees it.

A user gives the builder whatever they have; :func:`open_source` turns it into the folder
the benchmark's reader expects, and says what it did:

- a folder laid out as the authors publish it;
- a checkout or an unpacked archive one or two folders deeper (``R2I-Bench-main/data/...``):
  the root is the folder holding every path of :attr:`Benchmark.release_markers`;
- a zip or tar archive of the repository, unpacked into a temporary folder with every
  member checked (no path leaving the folder, no links, no device files, no bombs);
- nothing: the release is fetched from where its authors publish it
  (:attr:`Benchmark.official_release`), at the pinned revision, cached under
  ``$T2IREASON_RELEASES_CACHE`` (default ``$XDG_CACHE_HOME/t2ireason/releases``) for GitHub
  archives and in the Hugging Face cache for Hub datasets, then checked against the SHA-256 the
  project records for each file.

Offline or on any failure to fetch, :class:`ReleaseUnavailable` says exactly what to download
and where to put it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .benchmarks.base import Anomaly, Benchmark, OfficialRelease, ReleaseError
from .files import UnsafePath, atomic_folder, inside

__all__ = ["ResolvedSource", "ReleaseUnavailable", "ArchiveError", "open_source", "find_root", "outside_links",
           "contained", "unpack", "RELEASE_CHECKS", "NOT_CHECKED",
           "fetch_official", "verify_files", "github_archive_url", "releases_cache", "ARCHIVE_LIMITS"]

#: the GitHub archive of a commit; ``$T2IREASON_GITHUB_ARCHIVE_URL`` overrides it (same placeholders)
GITHUB_ARCHIVE_URL = "https://codeload.github.com/{repo}/tar.gz/{revision}"
#: what an archive may unpack to: members, total bytes, and bytes per compressed byte
ARCHIVE_LIMITS = {"max_members": 200_000, "max_bytes": 4 * 1024**3, "max_ratio": 200}
_COMMIT = re.compile(r"[0-9a-f]{40}")


class ReleaseUnavailable(ReleaseError):
    """The official release could not be fetched; the message says what to download and where to put it."""


class ArchiveError(ReleaseError):
    """An archive that cannot be unpacked safely (a path leaving the folder, a bomb, a broken file)."""


@dataclass
class ResolvedSource:
    """The folder a reader reads, and how it was found."""

    root: Path
    #: "folder", "checkout" (the root was found deeper), "archive", "github" or "hub"
    kind: str
    #: what was given (a path), or where it was fetched from (a URL, a Hub repository)
    given: str
    revision: str | None = None
    #: what was done on the way, one sentence each (for the build report and the summary)
    notes: list[str] = field(default_factory=list)
    #: the check of the files against the project's recorded hashes (see :func:`verify_files`)
    verification: dict[str, Any] | None = None
    #: irregularities of the folder itself (links leading out of it), for the build report
    anomalies: list[Anomaly] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "given": self.given, "root": str(self.root), "revision": self.revision,
                "notes": list(self.notes), "verification": self.verification}


# -- finding the root ------------------------------------------------------------------------------

def _has_markers(folder: Path, markers: tuple[str, ...]) -> bool:
    return all(any(folder.glob(m)) if any(ch in m for ch in "*?[") else (folder / m).exists() for m in markers)


def find_root(folder: Path, markers: tuple[str, ...], max_depth: int = 2) -> tuple[Path, int]:
    """The folder at or under ``folder`` (at most ``max_depth`` levels down, hidden folders aside)
    that holds every marker, and how deep it was; ``(folder, 0)`` when there are no markers or
    none is found (the reader then says what it misses). Several candidates at the same depth
    are an error naming them."""
    if not markers or _has_markers(folder, markers):
        return folder, 0
    level = [folder]
    for depth in range(1, max_depth + 1):
        level = [d for parent in level for d in sorted(parent.iterdir())
                 if d.is_dir() and not d.is_symlink() and not d.name.startswith(".")]
        found = [d for d in level if _has_markers(d, markers)]
        if len(found) == 1:
            return found[0], depth
        if found:
            shown = ", ".join(str(d.relative_to(folder)) for d in found)
            raise ReleaseError(f"{folder} holds several releases ({shown}): pass the one to build with --source")
    return folder, 0


# -- links leading out of a release folder --------------------------------------------------------

def _escapes(link: Path, root: Path) -> bool:
    target = link.resolve()
    return target != root and root not in target.parents


def outside_links(root: Path) -> list[str]:
    """The symbolic links under ``root`` (hidden files and folders aside, as readers skip them) that lead
    out of it, as sorted posix paths relative to ``root``."""
    base = root.resolve()
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in [*dirs, *files]:
            path = Path(folder) / name
            if not name.startswith(".") and path.is_symlink() and _escapes(path, base):
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


@contextmanager
def contained(root: Path) -> Iterator[tuple[Path, list[Anomaly]]]:
    """``root`` itself when no link in it leads out of it; else a temporary view of it without those
    links (folders mirrored, files and links that stay inside linked to their targets), so that no
    reader ever reads outside the release; each link left out is an ``outside_link`` anomaly (its
    target unnamed: a local path is no part of a dataset's report)."""
    leaving = outside_links(root)
    if not leaving:
        yield root, []
        return
    base, skip = root.resolve(), set(leaving)
    view = Path(tempfile.mkdtemp(prefix="t2ireason-release-view-"))
    try:
        for folder, dirs, files in os.walk(root):
            here = Path(folder).relative_to(root)
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in [*dirs, *files]:
                path, rel = Path(folder) / name, (here / name).as_posix()
                if name.startswith(".") or rel in skip:
                    continue
                if path.is_symlink():  # inside: to the view's own copy of its target, never to the original tree
                    (view / rel).symlink_to(view / path.resolve().relative_to(base))
                elif path.is_dir():
                    (view / rel).mkdir()
                else:
                    (view / rel).symlink_to(path.resolve())
        try:
            yield view, [Anomaly("outside_link", rel, None, "a symbolic link leading out of the release folder: not "
                                 "read, whatever its name") for rel in leaving]
        except ReleaseError as e:  # a reader that found too little in the view: say which folder, and why
            shown = ", ".join(leaving[:5]) + (f" and {len(leaving) - 5} more" if len(leaving) > 5 else "")
            e.args = (f"{str(e).replace(str(view), str(root))} (its link(s) leading out of the release folder are "
                      f"never read: {shown}; copy what they lead to into it, or give --source the folder where the "
                      "release really is)",)
            raise
    finally:
        shutil.rmtree(view, ignore_errors=True)


# -- archives --------------------------------------------------------------------------------------

def is_archive(path: Path) -> bool:
    return path.is_file() and (zipfile.is_zipfile(path) or tarfile.is_tarfile(path))


def _member_path(dest: Path, name: str, archive: Path) -> Path:
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or re.match(r"^[A-Za-z]:", name):
        raise ArchiveError(f"{archive.name}: member {name!r} would be written outside the folder: refusing the archive")
    try:
        return inside(dest, *pure.parts)
    except UnsafePath as e:
        raise ArchiveError(f"{archive.name}: {e}") from None


def _check_totals(archive: Path, members: int, total: int, limits: dict[str, int]) -> None:
    size = max(archive.stat().st_size, 1)
    if members > limits["max_members"]:
        raise ArchiveError(f"{archive.name}: {members} members, more than the {limits['max_members']} allowed")
    if total > limits["max_bytes"]:
        raise ArchiveError(f"{archive.name} unpacks to {total} bytes, more than the {limits['max_bytes']} allowed")
    if total > 10 * 1024**2 and total / size > limits["max_ratio"]:
        raise ArchiveError(f"{archive.name} unpacks to {total} bytes from {size}: a ratio over "
                           f"{limits['max_ratio']} is refused as a decompression bomb")


def _copy_limited(src, dst: Path, expected: int, archive: Path) -> None:
    """Copy a member's bytes, never more than it declared (a lying header cannot make a bomb)."""
    written = 0
    with open(dst, "wb") as out:
        while chunk := src.read(1 << 20):
            written += len(chunk)
            if written > expected:
                raise ArchiveError(f"{archive.name}: member {dst.name} holds more bytes than it declares")
            out.write(chunk)


def unpack(archive: Path, dest: Path, limits: dict[str, int] | None = None) -> list[str]:
    """Unpack a zip or tar archive (any compression tar reads) into ``dest``, safely.

    Refused whole: a member whose path leaves ``dest`` (absolute, ``..``), more members, more bytes
    or a higher ratio of unpacked to packed bytes than ``limits`` (:data:`ARCHIVE_LIMITS`).
    Skipped and returned as notes: symbolic and hard links, device files, FIFOs.
    """
    limits = {**ARCHIVE_LIMITS, **(limits or {})}
    archive, dest = Path(archive), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                infos = z.infolist()
                _check_totals(archive, len(infos), sum(i.file_size for i in infos), limits)
                for info in infos:
                    target = _member_path(dest, info.filename, archive)
                    mode = info.external_attr >> 16
                    if stat.S_ISLNK(mode):
                        skipped.append(f"{info.filename} (a symbolic link)")
                    elif info.is_dir():
                        target.mkdir(parents=True, exist_ok=True)
                    else:
                        target.parent.mkdir(parents=True, exist_ok=True)
                        with z.open(info) as src:
                            _copy_limited(src, target, info.file_size, archive)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as t:
                members = t.getmembers()
                _check_totals(archive, len(members), sum(m.size for m in members if m.isfile()), limits)
                for m in members:
                    target = _member_path(dest, m.name, archive)
                    if m.isdir():
                        target.mkdir(parents=True, exist_ok=True)
                    elif m.isfile():
                        target.parent.mkdir(parents=True, exist_ok=True)
                        src = t.extractfile(m)
                        _copy_limited(src, target, m.size, archive)
                    else:
                        what = "a link" if (m.issym() or m.islnk()) else "not a regular file"
                        skipped.append(f"{m.name} ({what})")
        else:
            raise ArchiveError(f"{archive}: neither a zip nor a tar archive")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as e:
        raise ArchiveError(f"{archive}: the archive is broken or incomplete ({e})") from None
    return [f"skipped {len(skipped)} member(s) of the archive that are not regular files: "
            + ", ".join(skipped[:10]) + (" ..." if len(skipped) > 10 else "")] if skipped else []


# -- verifying -------------------------------------------------------------------------------------

def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


#: what a build's release check found (``verification["status"]``): every recorded file matched; some matched and
#: others differ or are missing (the release, edited or incomplete); none matched (another revision, or another
#: writing of the layout such as the project's samples); nothing could be checked (the project records no hashes)
RELEASE_CHECKS = ("checked", "modified", "other files", "not checked")
NOT_CHECKED = "release not checked"


def verify_files(root: Path, official: OfficialRelease | None, *, enforce: bool) -> dict[str, Any]:
    """The release's files checked against the SHA-256 the project records (``official.files``).

    Returns ``{"status", "recorded", "verified", "mismatched", "missing", "enforced", "note"}``, ``status`` one
    of :data:`RELEASE_CHECKS`: a release whose files the project records no hash of is ``"not checked"``, its
    note starting with ``"release not checked"`` (what was read is not known to be the authors' files: a stand-in
    reads as the real one); with ``enforce`` a mismatched or missing file is a :class:`ReleaseError` (the pinned
    revision was asked for and something else came)."""
    if official is None or not official.files:
        where = f" of {official.repo} at {official.revision}" if official is not None else ""
        return {"status": "not checked", "recorded": 0, "verified": [], "mismatched": [], "missing": [],
                "enforced": False,
                "note": f"{NOT_CHECKED}: the project records no file hashes for this release{where}, so its files "
                        "were not verified: nothing tells the authors' files from a stand-in in the same layout"}
    base = root / official.subdir if official.subdir else root
    verified, mismatched, missing = [], [], []
    for rel, digest in sorted(official.files.items()):
        path = base / rel
        if not path.is_file():
            missing.append(rel)
        elif sha256_file(path) != digest.lower():
            mismatched.append(rel)
        else:
            verified.append(rel)
    status = "checked" if not (mismatched or missing) else "modified" if verified else "other files"
    result = {"status": status, "recorded": len(official.files),
              "verified": verified, "mismatched": mismatched, "missing": missing, "enforced": enforce, "note": ""}
    if mismatched or missing:
        what = "; ".join(filter(None, [f"{len(mismatched)} differ ({', '.join(mismatched[:5])})" if mismatched else "",
                                       f"{len(missing)} missing ({', '.join(missing[:5])})" if missing else ""]))
        if enforce:
            raise ReleaseError(f"the release does not match the files of {official.repo} at {official.revision} "
                               f"that the project recorded: {what}. The download is corrupt or the repository "
                               "changed; delete the cached copy and try again, or build another revision with "
                               "--revision (its files are then reported, not enforced)")
        result["note"] = f"not the recorded files of revision {official.revision}: {what}"
    else:
        result["note"] = f"all {len(verified)} recorded files match revision {official.revision}"
    return result


# -- fetching --------------------------------------------------------------------------------------

def releases_cache(cache_dir: str | os.PathLike | None = None) -> Path:
    """Where fetched GitHub releases are kept: ``cache_dir``, ``$T2IREASON_RELEASES_CACHE``, else
    ``$XDG_CACHE_HOME/t2ireason/releases`` (``~/.cache/t2ireason/releases``)."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("T2IREASON_RELEASES_CACHE")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "t2ireason" / "releases"


def github_archive_url(repo: str, revision: str) -> str:
    """The URL of the archive of ``repo`` at ``revision`` (``$T2IREASON_GITHUB_ARCHIVE_URL`` overrides
    the template, e.g. a mirror, or a local server in tests)."""
    template = os.environ.get("T2IREASON_GITHUB_ARCHIVE_URL") or GITHUB_ARCHIVE_URL
    return template.format(repo=repo, revision=revision)


def _download(url: str, target: Path) -> None:
    """``url`` into ``target``, resuming a ``.part`` file an interrupted download left."""
    from huggingface_hub.file_download import http_get

    part = target.with_name(target.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    with open(part, "ab") as f:
        http_get(url, f, resume_size=f.tell(), displayed_filename=target.name)
    os.replace(part, target)


def _unavailable(bench: Benchmark, official: OfficialRelease, revision: str, cause: str,
                 archive: Path | None = None, url: str | None = None) -> ReleaseUnavailable:
    if official.kind == "github":
        how = (f"Download {url} (the repository {official.repo} at commit {revision}) and either save it as\n"
               f"  {archive}\nand run the same command again, or pass it (or its unpacked folder, or a git "
               f"checkout at that commit: git clone https://github.com/{official.repo} && git -C "
               f"{official.repo.split('/')[-1]} checkout {revision}) with --source.")
    else:
        how = (f"Download the dataset repository {official.repo} at revision {revision}, e.g.\n"
               f"  hf download {official.repo} --repo-type dataset --revision {revision} "
               f"--local-dir {official.repo.split('/')[-1]}\nand pass that folder with --source.")
    return ReleaseUnavailable(f"cannot fetch the {bench.pretty_name} release: {cause}.\n{how}")


def fetch_official(bench: Benchmark, revision: str | None = None, *,
                   cache_dir: str | os.PathLike | None = None) -> ResolvedSource:
    """Fetch the authors' release of ``bench`` (at its pinned revision, or ``revision``) and check
    its files: GitHub archives are cached under :func:`releases_cache` (a finished download is
    reused, an interrupted one resumed); Hub datasets come through ``snapshot_download``."""
    official = bench.official_release
    if official is None:
        raise ReleaseError(f"{bench.pretty_name} has no official release the project can fetch: pass --source "
                           "with a folder, a checkout or an archive of the release")
    rev = revision or official.revision
    enforce = revision is None or revision == official.revision
    notes = []
    if not _COMMIT.fullmatch(rev):
        notes.append(f"revision {rev!r} is not a commit: what it names can change, and its files are not "
                     "the ones the project recorded")
        enforce = False
    if official.kind == "github":
        url = github_archive_url(official.repo, rev)
        cache = releases_cache(cache_dir)
        stem = f"{official.repo.replace('/', '--')}-{rev}"
        archive = cache / "downloads" / f"{stem}.tar.gz"
        unpacked = cache / stem
        if not (unpacked / ".complete").is_file():
            if archive.is_file():
                notes.append(f"used the archive already downloaded at {archive}")
            else:
                try:
                    _download(url, archive)
                except Exception as e:  # offline, refused, interrupted: the message says what to do instead
                    raise _unavailable(bench, official, rev, f"{type(e).__name__}: {e}".splitlines()[0],
                                       archive, url) from None
                notes.append(f"downloaded {url}")
            with atomic_folder(unpacked) as tmp:
                notes += unpack(archive, tmp / "src")
                (tmp / ".complete").write_text(url + "\n")
        else:
            notes.append(f"used the release cached at {unpacked}")
        root, depth = find_root(unpacked / "src", bench.release_markers)
        source = ResolvedSource(root, "github", url, rev, notes)
    else:
        from huggingface_hub import snapshot_download

        try:
            path = snapshot_download(official.repo, repo_type="dataset", revision=rev)
        except Exception as e:
            raise _unavailable(bench, official, rev, f"{type(e).__name__}: {e}".splitlines()[0]) from None
        root, _ = find_root(Path(path), bench.release_markers)
        source = ResolvedSource(root, "hub", official.repo, rev, notes + [f"snapshot of {official.repo} at {rev}"])
    source.verification = verify_files(source.root, official, enforce=enforce)
    return source


# -- everything together ---------------------------------------------------------------------------

@contextmanager
def open_source(bench: Benchmark, source: str | os.PathLike | None, *, revision: str | None = None,
                cache_dir: str | os.PathLike | None = None,
                limits: dict[str, int] | None = None) -> Iterator[ResolvedSource]:
    """The release folder for ``bench`` from ``source`` (a folder, a checkout, an archive) or, when
    ``source`` is None, from its official publication; a temporary unpacked archive is removed when
    the block ends. ``revision`` asks the official release at another commit (only without ``source``)."""
    if source is None:
        yield fetch_official(bench, revision, cache_dir=cache_dir)
        return
    if revision is not None:
        raise ReleaseError("--revision selects which official release to fetch: it cannot be combined with --source "
                           "(check out or download that revision and pass it with --source)")
    path = Path(source)
    official = bench.official_release
    if path.is_dir():
        root, depth = find_root(path, bench.release_markers)
        kind = "checkout" if depth else "folder"
        notes = [f"the release's root is {root.relative_to(path)}/, {depth} folder(s) below the one given"] if depth else []
        with contained(root) as (folder, anomalies):
            if anomalies:
                notes.append(f"{len(anomalies)} link(s) leading out of the release folder left unread (anomalies "
                             "'outside_link'); the release was read through a view of its folder without them")
            resolved = ResolvedSource(folder, kind, str(path), None, notes, anomalies=anomalies)
            # no hashes recorded: "not checked"; a benchmark with no publication of its own (MT2IE) claims nothing
            resolved.verification = verify_files(folder, official, enforce=False) if official is not None else None
            yield resolved
        return
    if is_archive(path):
        tmp = Path(tempfile.mkdtemp(prefix="t2ireason-release-"))
        try:
            notes = [f"unpacked the archive {path.name}"] + unpack(path, tmp, limits)
            root, depth = find_root(tmp, bench.release_markers)
            if depth:
                notes.append(f"the release's root in the archive is {root.relative_to(tmp)}/")
            resolved = ResolvedSource(root, "archive", str(path), None, notes)
            resolved.verification = verify_files(root, official, enforce=False) if official is not None else None
            yield resolved
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    single = ResolvedSource(path, "file", str(path))  # a single data file, or a Hub id some readers stream
    if official is not None:  # one file (or a stream): nothing the recorded hashes can check
        single.verification = verify_files(path, None, enforce=False)
    yield single
