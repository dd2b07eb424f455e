"""`dftool samples [NAME ...] [--all] [--dir DIR] [--force]`: list the bundled sample graphs, or
copy some into a directory to try the other commands on.

Each sample is NAME.pb (a binary GraphDef) with NAME.feeds.npz (one array per placeholder). In a
checkout they live in sample_graphs/; an installed wheel carries them as dftool/sample_graphs/
(setup.py copies them there), so both places are looked in.
"""
from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import click

from graphtool import graph_io
from graphtool.errors import UsageError

from .common import common_options, info, settings

FEEDS_SUFFIX = ".feeds.npz"
# "- `mlp.pb` — two dense layers ... `dftool inspect ...`" in sample_graphs/README.md
_README_ENTRY = re.compile(r"^- `(?P<name>[\w-]+)\.pb` — (?P<text>.*)$")


def samples_dir() -> Path:
    """The folder holding the samples: beside this package when installed from a wheel, else the
    checkout's sample_graphs/ (a checkout, or an editable install of one)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "sample_graphs", here.parent / "sample_graphs"):
        if candidate.is_dir():
            return candidate
    raise click.ClickException(f"no sample graphs found (looked in {here / 'sample_graphs'} and "
                               f"{here.parent / 'sample_graphs'}); this installation is incomplete")


def sample_names(folder: Path) -> list[str]:
    """Samples are the NAME.pb files that come with their NAME.feeds.npz."""
    return sorted(p.stem for p in folder.glob("*.pb") if (folder / f"{p.stem}{FEEDS_SUFFIX}").is_file())


def descriptions(folder: Path) -> dict[str, str]:
    """NAME -> the first sentence of its entry in the samples' README (empty when it has none)."""
    readme = folder / "README.md"
    if not readme.is_file():
        return {}
    found = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        match = _README_ENTRY.match(line)
        if match:
            text = match["text"].split(" `dftool inspect ")[0].replace("`", "")
            # The first sentence, without its asides in parentheses: one short line per sample.
            found[match["name"]] = re.sub(r" \([^()]*\)", "", text.split(". ")[0]).rstrip(". ·")
    return found


def _unknown(name: str, names: list[str]) -> UsageError:
    close = difflib.get_close_matches(name, names, n=3)
    hint = (f"did you mean {' or '.join(close)}? " if close else "") + f"samples: {', '.join(names)}"
    return UsageError(f"no sample named '{name}'", hint=hint)


def _print_list(folder: Path, names: list[str]) -> None:
    about = descriptions(folder)
    width = max(map(len, names), default=0)
    for name in names:
        line = f"{name:<{width}}  {about.get(name, '')}"
        if settings.verbose:   # -v: the files too
            files = [folder / f"{name}{suffix}" for suffix in (".pb", FEEDS_SUFFIX)]
            line += "  [" + ", ".join(f"{p.name} {p.stat().st_size:,} bytes" for p in files) + "]"
        click.echo(line.rstrip())
    info("copy one with: dftool samples NAME [--dir DIR]   (--all: every sample)")


def copy_samples(folder: Path, names: list[str], directory: str, *, force: bool) -> list[str]:
    """Copy NAME.pb and NAME.feeds.npz of each sample into `directory` (created if missing);
    returns the paths written. Nothing is written when a file is in the way and not `force`."""
    graph_io.ensure_directory(directory, "--dir")
    pairs = [(folder / f"{name}{suffix}", os.path.join(directory, f"{name}{suffix}"))
             for name in names for suffix in (".pb", FEEDS_SUFFIX)]
    if not force:
        existing = [target for _, target in pairs if os.path.lexists(target)]
        if existing:
            more = f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
            raise UsageError(f"{existing[0]} exists{more}; not overwritten", hint="--force replaces it")
    for source, target in pairs:
        graph_io.write_atomic(target, source.read_bytes())
    return [target for _, target in pairs]


def _complete_names(ctx, param, incomplete: str) -> list[str]:
    """Shell completion (docs/packaging.md) of sample names."""
    try:
        return [name for name in sample_names(samples_dir()) if name.startswith(incomplete)]
    except click.ClickException:
        return []


@click.command("samples")
@click.argument("names", nargs=-1, metavar="[NAME ...]", shell_complete=_complete_names)
@click.option("--all", "copy_all", is_flag=True, help="Copy every sample.")
@click.option("--dir", "directory", default=".", show_default=True, metavar="DIR",
              help="Where to copy the samples (created if missing).")
@click.option("--force", is_flag=True, help="Overwrite files that are already there.")
@common_options
def command(names, copy_all, directory, force):
    """List the bundled sample graphs, or copy NAME.pb and NAME.feeds.npz of the samples named
    (or of all with --all) into DIR."""
    folder = samples_dir()
    available = sample_names(folder)
    if copy_all and names:
        raise UsageError("give sample names or --all, not both")
    for name in names:
        if name not in available:
            raise _unknown(name, available)
    chosen = available if copy_all else list(dict.fromkeys(names))
    if not chosen:
        _print_list(folder, available)
        return
    written = copy_samples(folder, chosen, directory, force=force)
    if settings.verbose:
        for path in written:
            info(f"wrote {path}")
    info(f"wrote {len(written)} file(s) to {directory}: {', '.join(os.path.basename(p) for p in written)}")
    first = os.path.join(directory, chosen[0])
    info(f"try: dftool run {first}.pb --feeds {first}{FEEDS_SUFFIX}")
