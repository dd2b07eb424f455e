"""`dftool samples`: list the bundled samples, copy some or all, never clobber without --force."""
from __future__ import annotations

from .helpers import REPO_ROOT, error_line, run_dftool

SAMPLES = REPO_ROOT / "sample_graphs"
EVERY = sorted(p.stem for p in SAMPLES.glob("*.pb"))


def test_list_names_every_sample_with_its_description():
    code, out, err = run_dftool("samples")
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines()}
    assert sorted(rows) == EVERY
    assert "two dense layers" in rows["mlp"]
    assert "dftool samples NAME" in err   # the hint goes to stderr, the list alone to stdout


def test_verbose_list_shows_the_files():
    code, out, err = run_dftool("samples", "-v")
    assert code == 0, err
    size = (SAMPLES / "mlp.pb").stat().st_size
    row = next(line for line in out.splitlines() if line.startswith("mlp "))
    assert f"[mlp.pb {size:,} bytes, mlp.feeds.npz " in row


def test_copy_one_and_run_it(tmp_path):
    target = tmp_path / "new" / "dir"
    code, _, err = run_dftool("samples", "mlp", "--dir", target)
    assert code == 0, err
    assert sorted(p.name for p in target.iterdir()) == ["mlp.feeds.npz", "mlp.pb"]
    assert (target / "mlp.pb").read_bytes() == (SAMPLES / "mlp.pb").read_bytes()
    code, out, err = run_dftool("run", target / "mlp.pb", "--feeds", target / "mlp.feeds.npz")
    assert code == 0 and out.startswith("probs"), err


def test_copy_all(tmp_path):
    code, _, err = run_dftool("samples", "--all", "--dir", tmp_path, "-q")
    assert code == 0 and err == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{name}{suffix}" for name in EVERY for suffix in (".pb", ".feeds.npz"))


def test_existing_files_are_kept_unless_force(tmp_path):
    (tmp_path / "cond.feeds.npz").write_bytes(b"mine")
    code, _, err = run_dftool("samples", "mlp", "cond", "--dir", tmp_path)
    assert code == 2
    assert error_line(err) == \
        f"error: {tmp_path / 'cond.feeds.npz'} exists; not overwritten (hint: --force replaces it)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cond.feeds.npz"]   # nothing half-copied
    assert (tmp_path / "cond.feeds.npz").read_bytes() == b"mine"
    code, _, err = run_dftool("samples", "mlp", "cond", "--dir", tmp_path, "--force")
    assert code == 0, err
    assert (tmp_path / "cond.feeds.npz").read_bytes() == (SAMPLES / "cond.feeds.npz").read_bytes()


def test_unknown_name_suggests_and_lists(tmp_path):
    code, _, err = run_dftool("samples", "mpl", "--dir", tmp_path)
    assert code == 2
    line = error_line(err)
    assert line.startswith("error: no sample named 'mpl' (hint: did you mean mlp? samples: cond, convnet, mlp")
    assert not any(tmp_path.iterdir())


def test_names_and_all_conflict():
    code, _, err = run_dftool("samples", "mlp", "--all")
    assert code == 2 and "not both" in error_line(err)


def test_dir_that_is_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    code, _, err = run_dftool("samples", "mlp", "--dir", tmp_path / "file")
    assert code == 2 and "is not a directory" in error_line(err)
