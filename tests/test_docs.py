"""The documentation cannot drift from the code: docs/commands.md lists exactly the options click
knows for every command, every link in the README and docs/ resolves inside the repository, and
no tracked file names a path of one particular machine.

The option check says which option of which command is missing or extra, so an option added to
a command (or a new command) names the line of docs/commands.md to write.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import click
import pytest

from .helpers import REPO_ROOT

COMMANDS_DOC = REPO_ROOT / "docs" / "commands.md"
COMMON_SECTION = "Options every command takes"
# An option as the first cell of a docs table row names it: | `--feed NAME=FILE.npy` | ... or
# | `-q`, `--quiet` | ... or | `--jit` / `--no-jit` | ...
_OPTION = re.compile(r"`(--?[A-Za-z][\w-]*)")


def documented_options() -> dict[str, set[str]]:
    """Section title ('dftool run', or COMMON_SECTION) -> the options its tables list."""
    sections: dict[str, set[str]] = {}
    current = None
    for line in COMMANDS_DOC.read_text().splitlines():
        heading = re.match(r"^## (.+?)\s*$", line)
        if heading:
            current = heading.group(1)
            sections[current] = set()
        elif current is not None and line.startswith("| `-"):
            first_cell = line.split(" | ")[0]
            sections[current] |= set(_OPTION.findall(first_cell))
    return sections


def click_options(command: click.Command) -> set[str]:
    """Every spelling of every option the command accepts (--help included, spelled as the
    group's context settings say: -h too)."""
    group = cli_group()
    parent = click.Context(group, **group.context_settings)
    ctx = parent if command is group else click.Context(command, parent=parent)
    params = command.get_params(ctx)
    return {name for param in params if isinstance(param, click.Option)
            for name in (*param.opts, *param.secondary_opts)}


def cli_group() -> click.Group:
    from cli.main import _group

    return _group()


def test_every_command_has_a_section_and_nothing_else_does():
    group = cli_group()
    sections = documented_options()
    documented = {title.removeprefix("dftool ") for title in sections if title.startswith("dftool ")}
    undocumented = sorted(set(group.commands) - documented)
    unknown = sorted(documented - set(group.commands))
    assert not undocumented, f"commands without a '## dftool NAME' section in docs/commands.md: {undocumented}"
    assert not unknown, f"docs/commands.md documents commands that do not exist: {unknown}"


def test_docs_list_every_option_of_every_command():
    group = cli_group()
    sections = documented_options()
    common = sections[COMMON_SECTION]
    problems = []
    group_options = click_options(group) - {"--version"}
    if group_options != common:
        problems += [f"dftool {o}: accepted before the command but not in '{COMMON_SECTION}'"
                     for o in sorted(group_options - common)]
        problems += [f"'{COMMON_SECTION}' lists {o}, which dftool itself does not accept"
                     for o in sorted(common - group_options)]
    for name, command in sorted(group.commands.items()):
        actual = click_options(command)
        section = sections.get(f"dftool {name}", set())
        problems += [f"dftool {name} {o}: not documented in docs/commands.md"
                     for o in sorted(actual - section - common)]
        problems += [f"docs/commands.md lists dftool {name} {o}, which the command does not accept"
                     for o in sorted((section | common) - actual)]
    assert not problems, "\n".join(problems)


def test_the_option_parser_reads_every_table_shape():
    """The parser above must not silently find nothing (a test of the test)."""
    sections = documented_options()
    assert {"-q", "--quiet", "-h", "--help", "--max-input-bytes"} <= sections[COMMON_SECTION]
    assert {"--jit", "--no-jit", "--feed", "--feeds", "--rtol"} <= sections["dftool run"]


# --- links and paths --------------------------------------------------------------------------

def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    return [REPO_ROOT / name for name in listed.decode().split("\0") if name]


def markdown_files() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    anchors = set()
    for line in path.read_text().splitlines():
        heading = re.match(r"^#+ (.+?)\s*$", line)
        if heading:
            text = heading.group(1).strip().lower().replace("`", "")
            anchors.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return anchors


def test_every_link_resolves_inside_the_repository():
    """Files, directories and heading anchors; no web addresses (the docs travel with a clone)."""
    broken = []
    for doc in markdown_files():
        text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)   # code is not links
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):   # the web: a clone offline cannot follow it
                broken.append(f"{doc.relative_to(REPO_ROOT)}: ({target}) leaves the repository")
                continue
            path_part, _, anchor = target.partition("#")
            resolved = (doc.parent / unquote(path_part)).resolve() if path_part else doc
            where = f"{doc.relative_to(REPO_ROOT)}: ({target})"
            if not resolved.is_relative_to(REPO_ROOT):
                broken.append(f"{where} leaves the repository")
            elif not resolved.exists():
                broken.append(f"{where} does not exist")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{where}: no heading with anchor #{anchor}")
    assert not broken, "\n".join(broken)


# A path that only exists on one machine: a home or root directory, a /work checkout, a macOS home.
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|root|home|Users)/[\w.-]")


def test_no_tracked_file_names_a_path_of_one_machine():
    found = []
    for path in tracked_files():
        if path.suffix in (".pb", ".npz", ".npy", ".png", ".jpg", ".index") or not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue                         # binary data, not instructions
        for number, line in enumerate(text.splitlines(), 1):
            if MACHINE_PATH.search(line):
                found.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "\n".join(found)


# (the machine paths below are split in two so that this file does not name one itself)
@pytest.mark.parametrize("line, machine", [("run /work" + "/main/python x.py", True),
                                           ("cd /root" + "/src", True), ("see /home" + "/ann/m.pb", True),
                                           ("python tools/gen_proto.py", False), ("~/.cache/dftool", False),
                                           ("graphtool/work/x.py", False)])
def test_the_machine_path_pattern(line, machine):
    assert bool(MACHINE_PATH.search(line)) == machine


# --- the reports page -------------------------------------------------------------------------

def _report_docs_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_report_docs", REPO_ROOT / "tools" / "gen_report_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reports_page_is_generated_from_the_current_schemas():
    tool = _report_docs_tool()
    schemas = {path.name.removesuffix(".schema.json") for path in tool.SCHEMAS.glob("*.schema.json")}
    assert set(tool.ORDER) == schemas, "tools/gen_report_docs.py ORDER must list every schema file"
    assert tool.PAGE.read_text() == tool.render(), "docs/reports.md is stale: run python tools/gen_report_docs.py"
