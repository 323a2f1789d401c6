"""From a built dataset folder to the Hub: what :func:`publish` uploads and how (``t2ireason push``,
``datasets_scripts/push.py``).

The folder is checked first (a card whose YAML names a license, configs and dataset_info, every
config's data files present); hidden files are never uploaded. The token comes from the caller, else
the environment or ``huggingface-cli login``, and is never printed or returned.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .build import BuildError
from .exports import EVAL_RESULTS_DIR
from .hub_ids import check_license, check_repo_id, check_revision

__all__ = ["publish", "folder_files"]

#: never uploaded: hidden files and folders (caches, editor files)
_IGNORE = [".*", "*/.*"]


def folder_files(folder: str | os.PathLike) -> list[str]:
    """The files of ``folder`` that :func:`publish` uploads, relative and sorted."""
    from huggingface_hub.utils import filter_repo_objects

    folder = Path(folder)
    paths = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    return sorted(filter_repo_objects(paths, ignore_patterns=_IGNORE))


def _check_folder(folder: Path) -> None:
    from huggingface_hub import DatasetCard

    if not folder.is_dir():
        raise FileNotFoundError(f"dataset folder not found: {folder}")
    card = folder / "README.md"
    if not card.is_file():
        raise BuildError(f"{folder} has no README.md: build it with datasets_scripts/build.py first")
    data = DatasetCard.load(card).data
    missing = [k for k in ("license", "configs", "dataset_info") if not data.get(k)]
    if missing:
        raise BuildError(f"{card}: the card's YAML lacks {', '.join(missing)}")
    check_license(data["license"], f"{card}: the card's license")
    _check_eval_results(folder)
    for config in data["configs"]:
        for spec in config.get("data_files", []):
            pattern = spec["path"] if isinstance(spec, dict) else spec
            if not list(folder.glob(pattern)):
                raise BuildError(f"{card}: config {config['config_name']!r} names {pattern} but no file matches")


def _check_eval_results(folder: Path) -> None:
    """The ``.eval_results`` entries an export holds for model repositories (they are copied there,
    not uploaded here): each names a Hub dataset id and, where given, a commit."""
    import yaml

    for file in sorted(folder.glob(f"{EVAL_RESULTS_DIR}/*/.eval_results/*.yaml")):
        for entry in yaml.safe_load(file.read_text(encoding="utf-8")) or []:
            dataset = (entry.get("dataset") or {}) if isinstance(entry, dict) else {}
            where = f"{file.relative_to(folder)}: dataset"
            check_repo_id(str(dataset.get("id")), f"{where} id")
            if dataset.get("revision") is not None:
                check_revision(str(dataset["revision"]), f"{where} revision", commit=True)


def publish(folder: str | os.PathLike, repo_id: str, *, token: str | None = None, private: bool | None = None,
            revision: str | None = None, commit_message: str | None = None, create_pr: bool = False,
            dry_run: bool = False) -> dict[str, Any]:
    """Upload a built folder as the dataset repository ``repo_id`` (created if needed).

    The token comes from ``token``, else the environment (``HF_TOKEN``) or the
    standard ``huggingface-cli login``; it is never printed or returned. With
    ``dry_run`` nothing is sent and the result lists what would be uploaded.
    """
    folder = Path(folder)
    check_repo_id(repo_id)
    if revision is not None:
        check_revision(revision)
    _check_folder(folder)
    plan = {"repo_id": repo_id, "repo_type": "dataset", "folder": str(folder), "files": folder_files(folder),
            "dry_run": dry_run}
    if dry_run:
        return plan
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    repo = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(folder),
                               commit_message=commit_message or f"Upload {folder.name} built by t2i-reason",
                               revision=revision, create_pr=create_pr, ignore_patterns=_IGNORE)
    return plan | {"url": str(getattr(repo, "url", repo)), "commit": getattr(commit, "commit_url", str(commit))}
