"""What goes into Hub metadata, checked by its form before anything is written: a license id from the
Hub's own list, a repository id, a revision. A placeholder copied from a README (``"<the release's
license>"``, ``<org>/name``, ``@<commit>``) is one clear line, never a dataset card or an
``.eval_results`` entry that the Hub then shows or rejects."""

from __future__ import annotations

import difflib
import functools
import re
from importlib import resources

__all__ = ["hub_licenses", "check_license", "check_repo_id", "check_revision", "check_dataset_ref", "is_commit"]

#: the Hub's license ids (its documentation's table), shipped as data: see the file's header
LICENSES_FILE = "licenses.txt"
_COMMIT = re.compile(r"[0-9a-f]{40}")
#: what git refuses in a branch or tag name (``git check-ref-format``), and the brackets of a placeholder
_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\<>{}]|\.\.|@\{|//|^/|/$|\.$|^@$|(^|/)\.|\.lock(/|$)")


@functools.cache
def hub_licenses() -> tuple[str, ...]:
    """The license ids a Hub repository card's ``license:`` takes, in the documentation's order."""
    text = (resources.files("t2ireason") / "hub_cards" / LICENSES_FILE).read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def check_license(license: str, what: str = "--license") -> str:
    """The Hub's id for ``license`` (taken in any case, as SPDX ids are: ``Apache-2.0`` is
    ``apache-2.0``), or a ValueError naming the closest ids the Hub knows."""
    known = hub_licenses()
    given = str(license).strip()
    if given.lower() in known:
        return given.lower()
    close = difflib.get_close_matches(given.lower(), known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise ValueError(f"{what} {license!r} is not a license id the Hub knows ({hint}the ids: "
                     "https://huggingface.co/docs/hub/repositories-licenses; 'other' for a license not listed)")


def check_repo_id(repo_id: str, what: str = "--repo") -> str:
    """``repo_id`` when it has a Hub repository id's form (``huggingface_hub``'s own check:
    ``name`` or ``namespace/name``, letters, digits, ``-_.``), else a ValueError saying so."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        raise ValueError(f"{what} {repo_id!r} is not a Hub repository id (namespace/name of letters, digits, "
                         f"'-', '_', '.'): {e}") from None
    return repo_id


def is_commit(text: str) -> bool:
    """Whether ``text`` is a full commit hash (40 hexadecimal digits), not a branch or tag name."""
    return bool(_COMMIT.fullmatch(str(text)))


def check_revision(revision: str, what: str = "--revision", *, commit: bool = False) -> str:
    """``revision`` when it is a commit (40 hexadecimal digits) or, unless ``commit``, a branch or
    tag name git would take (no spaces, ``..``, ``~^:?*[\\``...) and no placeholder brackets."""
    text = str(revision)
    if is_commit(text):
        return text
    if commit:
        raise ValueError(f"{what} {revision!r} is not a commit: the 40 hexadecimal digits of one "
                         "(the Hub shows them on the repository's 'Files and versions' history)")
    if not text or _BAD_REF.search(text):
        raise ValueError(f"{what} {revision!r} is neither a commit (40 hexadecimal digits) nor a branch or "
                         "tag name")
    return text


def check_dataset_ref(text: str, what: str) -> tuple[str, str | None]:
    """``(dataset id, commit or None)`` of ``"<id>"`` or ``"<id>@<commit>"``, each checked by its form:
    the Hub's evaluation results record a dataset's revision as a commit."""
    repo_id, sep, revision = str(text).partition("@")
    check_repo_id(repo_id, what)
    if sep:
        check_revision(revision, f"{what} revision", commit=True)
    return repo_id, revision or None
