"""Issue 43, a new user's first day: `python -m t2ireason`, the help texts, the README's shell blocks pasted."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from t2ireason import __version__, cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "perf" / "README.md", *sorted((ROOT / "metrics").glob("*/README.md"))]


def test_python_dash_m_runs_the_command():
    done = subprocess.run([sys.executable, "-m", "t2ireason", "--version"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"t2ireason {__version__}", done.stderr
    done = subprocess.run([sys.executable, "-m", "t2ireason"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "generate" in done.stderr and "COMMAND" in done.stderr


def _shell_blocks() -> list[tuple[str, int, str]]:
    blocks = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for found in re.finditer(r"^```(?:bash|sh|shell|console)\n(.*?)^```", text, re.M | re.S):
            blocks.append((doc.relative_to(ROOT).as_posix(), text[: found.start()].count("\n") + 1, found.group(1)))
    return blocks


def _code(block: str) -> str:
    """The block without its comments (a '#' starting a word, outside quotes: near enough for these blocks)."""
    return "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in block.splitlines())


def test_the_readmes_shell_blocks_paste_as_shell():
    """`--license <the release's license>` was a syntax error pasted, `<org>/r2i-results` a redirection from a
    file named org into one named /r2i-results: what a user must choose is a variable that stops the block."""
    blocks = _shell_blocks()
    assert len(blocks) >= 5
    bash = shutil.which("bash")
    for where, line, block in blocks:
        placeholders = re.findall(r"<[A-Za-z][^<>\n]*>", _code(block))
        assert not placeholders, f"{where}:{line}: {placeholders}"
        if bash:
            checked = subprocess.run([bash, "-n"], input=block, capture_output=True, text=True)
            assert checked.returncode == 0, f"{where}:{line}: {checked.stderr}"


def test_the_top_level_help_shows_no_markup_and_report_names_latex(capsys):
    """The top-level help showed ``t2ireason`` with reStructuredText's backquotes; `report`'s line said
    "(Markdown, CSV)" though it writes LaTeX, figures and a page too."""
    assert cli.main([]) == 2
    said = capsys.readouterr().err
    assert "``" not in said, said
    report = next(line for line in said.splitlines() if line.strip().startswith("report"))
    assert "LaTeX" in report, report
