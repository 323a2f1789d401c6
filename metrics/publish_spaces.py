"""Create or update the Hub Space of each metric module in this folder.

``evaluate-cli`` (which does this for evaluate's own metrics) is broken with
huggingface_hub >= 1, so this uses ``HfApi`` directly: one Space per metric
(``create_repo(repo_type="space", space_sdk="gradio")``), then one commit with
the module, ``app.py``, ``requirements.txt`` and a ``README.md`` whose Space
front matter (title, emoji, sdk, app_file, tags: evaluate, metric, and
evaluate's ``description``) is built from the metric card. Afterwards
``evaluate.load("<org>/<name>")`` loads the metric from its Space.

    python metrics/publish_spaces.py --org my-org                    # every metric
    python metrics/publish_spaces.py --org my-org --only vqascore --dry-run
    python metrics/publish_spaces.py --org my-org \\
        --requirement "t2i-reason @ git+https://github.com/<org>/t2i-reason"

The token comes from the environment (``HF_TOKEN``) or a saved ``hf auth
login``; it is never printed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.S)
SKIP = {"__pycache__", ".ipynb_checkpoints"}


def metric_folders(root: Path = HERE) -> list[Path]:
    """The metric modules under ``root``: folders holding ``<name>/<name>.py``."""
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / f"{p.name}.py").is_file())


def _body(card: str) -> str:
    return FRONT_MATTER.sub("", card, count=1).lstrip()


def card_title(card: str, name: str) -> str:
    """The card's first heading without evaluate's "Metric Card for" prefix."""
    m = re.search(r"^#\s+(.+)$", _body(card), re.M)
    title = m.group(1).strip() if m else name
    return re.sub(r"^Metric Card for\s+", "", title, flags=re.I)


def card_description(card: str, limit: int = 300) -> str:
    """The first paragraph of the card's description section, as plain one-line text."""
    m = re.search(r"^##\s+[^\n]*description[^\n]*\n+(.+?)(?:\n\s*\n|\Z)", _body(card), re.S | re.M | re.I)
    if not m:
        return ""
    text = re.sub(r"[*_`]", "", " ".join(m.group(1).split()))
    if len(text) > limit:  # cut at the last sentence end that fits, else at a word
        cut = text[:limit]
        text = cut[: cut.rfind(". ") + 1] if ". " in cut else cut.rsplit(" ", 1)[0] + "..."
    return text


def space_readme(folder: Path, sdk_version: str | None = None) -> str:
    """The Space's README.md: front matter built from the card, then the card itself."""
    from huggingface_hub import SpaceCardData

    card = (folder / "README.md").read_text(encoding="utf-8")
    data = SpaceCardData(title=card_title(card, folder.name), sdk="gradio", sdk_version=sdk_version,
                         app_file="app.py", tags=["evaluate", "metric"], emoji="🤗", colorFrom="blue",
                         colorTo="red", pinned=False, description=card_description(card))
    return f"---\n{data.to_yaml()}\n---\n\n{_body(card)}"


def space_files(folder: Path, *, requirement: str | None = None, sdk_version: str | None = None) -> dict[str, bytes]:
    """path in the Space -> content: the metric folder with the Space README and,
    with ``requirement``, the ``t2i-reason`` line of requirements.txt replaced."""
    missing = [f for f in (f"{folder.name}.py", "README.md", "app.py", "requirements.txt") if not (folder / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks {', '.join(missing)}")
    files = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
             if p.is_file() and not SKIP.intersection(p.parts) and p.suffix != ".pyc"}
    files["README.md"] = space_readme(folder, sdk_version).encode()
    if requirement:
        lines = files["requirements.txt"].decode().splitlines()
        lines = [requirement if re.match(r"t2i[-_]reason\b", ln.strip()) else ln for ln in lines]
        if requirement not in lines:
            lines.append(requirement)
        files["requirements.txt"] = ("\n".join(lines) + "\n").encode()
    return files


def publish(folder: Path, repo_id: str, api=None, *, private: bool = False, dry_run: bool = False,
            requirement: str | None = None, sdk_version: str | None = None) -> dict[str, bytes]:
    """Create (if needed) and update the Space ``repo_id`` from ``folder``. Returns the files sent."""
    files = space_files(folder, requirement=requirement, sdk_version=sdk_version)
    if dry_run:
        print(f"[dry run] would create/update space {repo_id} with: {', '.join(files)}")
        print(files["README.md"].decode().split("\n---\n", 1)[0] + "\n---")
        return files
    from huggingface_hub import CommitOperationAdd

    api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
    api.create_commit(repo_id, [CommitOperationAdd(path_in_repo=k, path_or_fileobj=v) for k, v in files.items()],
                      repo_type="space", commit_message=f"Update the {folder.name} metric module")
    print(f"updated https://huggingface.co/spaces/{repo_id}")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--org", required=True, help="Hub user or organisation owning the Spaces")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="publish only these metrics")
    parser.add_argument("--private", action="store_true", help="create the Spaces private")
    parser.add_argument("--dry-run", action="store_true", help="show what would be uploaded; no network")
    parser.add_argument("--requirement", help="pip spec replacing the t2i-reason line of requirements.txt")
    parser.add_argument("--sdk-version", help="gradio version of the Spaces (default: the Hub's)")
    args = parser.parse_args(argv)

    folders = {p.name: p for p in metric_folders()}
    names = args.only or list(folders)
    unknown = [n for n in names if n not in folders]
    if unknown:
        parser.error(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(folders)}")
    api = None
    if not args.dry_run:
        from huggingface_hub import HfApi, get_token

        if not get_token():
            parser.error("no Hub token: set HF_TOKEN or run `hf auth login` (or use --dry-run)")
        api = HfApi(library_name="t2i-reason")
    for name in names:
        publish(folders[name], f"{args.org}/{name}", api, private=args.private, dry_run=args.dry_run,
                requirement=args.requirement, sdk_version=args.sdk_version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
