"""Create or update the Hub Space of each metric module in this folder.

A Space must build from its own files. The Hub's builder installs ``requirements.txt``
*before* it copies the Space's files (its Dockerfile mounts that one file:
``RUN --mount=target=/tmp/requirements.txt,source=requirements.txt pip install -r
/tmp/requirements.txt gradio[...]==<sdk_version>``), so a wheel uploaded into the Space
cannot be named there, and ``t2i-reason`` is on no index. Each Space therefore ships the
``t2ireason`` package itself, exactly as the package's wheel holds it, beside ``app.py``
(where Python imports it from), and its ``requirements.txt`` lists the package's
dependencies, read from the wheel's metadata, with the extras the metric's own
``requirements.txt`` names on its ``t2i-reason[...]`` line. ``app.py`` loads the metric
from the Space's own module file. The card's YAML front matter (the same on every card:
gradio version, Python version, tags) is the Space's configuration, uploaded as it is.

A Space on CPU hardware (the Hub's default; a card whose ``suggested_hardware`` names no GPU) takes
torch's CPU build from PyTorch's own index (``--extra-index-url`` in its requirements.txt: a 190 MB
wheel, where PyPI's CUDA build brings some 6 GB of CUDA libraries that such a Space cannot use, to
call an API judge); a card that suggests GPU hardware gets PyPI's build.

``evaluate-cli`` (which does this for evaluate's own metrics) is broken with
huggingface_hub >= 1, so this uses ``HfApi`` directly.

    python metrics/publish_spaces.py --org my-org                     # every metric
    python metrics/publish_spaces.py --org my-org --only vqascore --dry-run
    python metrics/publish_spaces.py --out spaces/                    # the Spaces' files, locally
    python metrics/publish_spaces.py --org my-org --requirement "t2i-reason==0.1.0"   # once on an index

The wheel is built with ``python -m build`` (``pip install build``) unless ``--wheel``
names one. The token comes from the environment (``HF_TOKEN``) or a saved ``hf auth
login``; it is never printed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: the gradio of every Space: each card's ``sdk_version`` (tests/metrics/test_cards.py checks it)
#: and the version tests/test_spaces.py installs to serve an app
GRADIO_VERSION = "6.31.0"
PACKAGE = "t2ireason"
FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.S)
PACKAGE_LINE = re.compile(r"^\s*t2i[-_]reason\s*(?:\[([^\]]*)\])?\s*$", re.I)
SKIP = {"__pycache__", ".ipynb_checkpoints"}
#: where a Space without a GPU finds torch's CPU build (pip prefers its 2.N.M+cpu to PyPI's 2.N.M)
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"


def metric_folders(root: Path = HERE) -> list[Path]:
    """The metric modules under ``root``: folders holding ``<name>/<name>.py``."""
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / f"{p.name}.py").is_file())


def build_wheel(out_dir: Path) -> Path:
    """The package's wheel, built from this checkout with ``python -m build`` (the sdist first, then
    the wheel from it, so nothing left over in the checkout's ``build/`` can slip in)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out_dir), str(ROOT)],
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"python -m build failed (pip install build?):\n{done.stderr[-2000:]}")
    (wheel,) = sorted(out_dir.glob("t2i_reason-*.whl"))[-1:]
    return wheel


def wheel_requirements(wheel: Path, extras: set[str]) -> list[str]:
    """The wheel's dependencies (``Requires-Dist``) with those of ``extras``, as requirement lines."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(zf.read(name).decode("utf-8"))
    lines = []
    for spec in metadata.get_all("Requires-Dist") or []:
        req = Requirement(spec)
        if req.marker is None:
            lines.append(str(req))
        elif "extra" in str(req.marker):
            if any(req.marker.evaluate({"extra": e}) for e in extras):
                req.marker = None
                lines.append(str(req))
        else:  # a platform or Python-version marker: the Space's pip decides
            lines.append(str(req))
    return list(dict.fromkeys(lines))


def _package_files(wheel: Path) -> dict[str, bytes]:
    """The package's files as the wheel installs them (metadata left out)."""
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n) for n in zf.namelist()
                if n.startswith(f"{PACKAGE}/") and not n.endswith("/") and "__pycache__" not in n}


def has_gpu(folder: Path) -> bool:
    """Whether the Space's card asks for GPU hardware (``suggested_hardware`` other than ``cpu-*``;
    without one a Space runs on the Hub's default, ``cpu-basic``)."""
    from huggingface_hub import SpaceCard

    hardware = SpaceCard.load(folder / "README.md").data.get("suggested_hardware") or "cpu-basic"
    return not str(hardware).startswith("cpu")


def space_requirements(folder: Path, *, wheel: Path | None = None, requirement: str | None = None) -> str:
    """The Space's requirements.txt: the folder's, with its ``t2i-reason[extras]`` line replaced by
    ``requirement`` or, by default, by the package's own dependencies (the package ships in the Space);
    without a GPU, torch's CPU build (:data:`CPU_TORCH_INDEX`)."""
    lines = (folder / "requirements.txt").read_text(encoding="utf-8").splitlines()
    out: list[str] = [] if has_gpu(folder) else [
        "# no GPU on this Space's hardware: torch's CPU build, not PyPI's CUDA one (some 6 GB it cannot use)",
        f"--extra-index-url {CPU_TORCH_INDEX}"]
    for line in lines:
        m = PACKAGE_LINE.match(line)
        if not m:
            out.append(line)
        elif requirement:
            out.append(requirement)
        else:
            if wheel is None:
                raise ValueError("a wheel is needed to list the package's dependencies")
            extras = {e.strip() for e in (m.group(1) or "").split(",") if e.strip()}
            out.append(f"# t2i-reason{'[' + ','.join(sorted(extras)) + ']' if extras else ''} ships in this Space "
                       f"({PACKAGE}/); its dependencies:")
            out.extend(wheel_requirements(wheel, extras))
    if not any(PACKAGE_LINE.match(line) for line in lines):
        raise ValueError(f"{folder / 'requirements.txt'} has no t2i-reason line")
    return "\n".join(out) + "\n"


def space_files(folder: Path, *, wheel: Path | None = None, requirement: str | None = None) -> dict[str, bytes]:
    """path in the Space -> content: the metric folder (its card, with the Space's front matter, as it
    is), requirements.txt made installable and, unless ``requirement`` names the package, the package."""
    missing = [f for f in (f"{folder.name}.py", "README.md", "app.py", "requirements.txt") if not (folder / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks {', '.join(missing)}")
    if not FRONT_MATTER.match((folder / "README.md").read_text(encoding="utf-8")):
        raise ValueError(f"{folder / 'README.md'} has no YAML front matter (the Space's configuration)")
    files = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
             if p.is_file() and not SKIP.intersection(p.parts) and p.suffix != ".pyc"}
    files["requirements.txt"] = space_requirements(folder, wheel=wheel, requirement=requirement).encode()
    if not requirement:
        files.update(_package_files(wheel))
    return files


def write_space(folder: Path, out: Path, **kwargs) -> Path:
    """The Space of ``folder`` written into ``out`` (what the Space's repository holds)."""
    for path, data in space_files(folder, **kwargs).items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return out


def publish(folder: Path, repo_id: str, api=None, *, private: bool = False, dry_run: bool = False,
            wheel: Path | None = None, requirement: str | None = None) -> dict[str, bytes]:
    """Create (if needed) and update the Space ``repo_id`` from ``folder``; files the Space no longer
    has are deleted. Returns the files sent."""
    files = space_files(folder, wheel=wheel, requirement=requirement)
    if dry_run:
        package = sum(p.startswith(f"{PACKAGE}/") for p in files)
        print(f"[dry run] would create/update space {repo_id} with: "
              f"{', '.join(p for p in files if not p.startswith(f'{PACKAGE}/'))}"
              + (f" and the {PACKAGE} package ({package} files)" if package else ""))
        print(files["README.md"].decode().split("\n---\n", 1)[0] + "\n---")
        return files
    api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        write_space(folder, Path(tmp), wheel=wheel, requirement=requirement)
        api.upload_folder(folder_path=tmp, repo_id=repo_id, repo_type="space", delete_patterns="*",
                          commit_message=f"Update the {folder.name} metric module")
    print(f"updated https://huggingface.co/spaces/{repo_id}")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--org", help="Hub user or organisation owning the Spaces")
    parser.add_argument("--out", type=Path, help="write each Space's files into OUT/<name> instead of uploading")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="publish only these metrics")
    parser.add_argument("--private", action="store_true", help="create the Spaces private")
    parser.add_argument("--dry-run", action="store_true", help="show what would be uploaded; no network")
    parser.add_argument("--wheel", type=Path, help="the t2i-reason wheel to ship (default: build one)")
    parser.add_argument("--requirement", help="a pip spec of t2i-reason from an index, instead of shipping the package")
    args = parser.parse_args(argv)
    if not args.org and not args.out:
        parser.error("give --org (publish to the Hub) or --out (write the Spaces locally)")
    if args.wheel is not None and not args.wheel.is_file():
        parser.error(f"--wheel {args.wheel} does not exist")

    folders = {p.name: p for p in metric_folders()}
    names = args.only or list(folders)
    unknown = [n for n in names if n not in folders]
    if unknown:
        parser.error(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(folders)}")
    api = None
    if args.org and not args.out and not args.dry_run:
        from huggingface_hub import HfApi, get_token

        if not get_token():
            parser.error("no Hub token: set HF_TOKEN or run `hf auth login` (or use --dry-run)")
        api = HfApi(library_name="t2i-reason")
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel
        if wheel is None and not args.requirement:
            wheel = build_wheel(Path(tmp))
        for name in names:
            if args.out:
                print(f"wrote {write_space(folders[name], args.out / name, wheel=wheel, requirement=args.requirement)}")
            else:
                publish(folders[name], f"{args.org}/{name}", api, private=args.private, dry_run=args.dry_run,
                        wheel=wheel, requirement=args.requirement)
    return 0


if __name__ == "__main__":
    sys.exit(main())
