"""The `checkpoint` state file (graphtool/checkpoint/state_file.py): TF's own file, latest_checkpoint,
retention as tf.train.Saver's max_to_keep, escapes and malformed files."""
import os

import numpy as np
import pytest

from graphtool.checkpoint import CheckpointError
from graphtool.checkpoint.state_file import (CheckpointState, format_state, latest_checkpoint, parse_state,
                                             read_state, record_checkpoint, write_state)
from graphtool.checkpoint.writer import write_bundle

from .helpers import REPO_ROOT

TF_CKPT_DIR = REPO_ROOT / "tests" / "fixtures" / "checkpoints" / "tf_saver" / "ckpt"


def test_reads_the_state_file_tensorflow_wrote():
    state = read_state(TF_CKPT_DIR)
    assert state.model_checkpoint_path == str(TF_CKPT_DIR / "model.ckpt")
    assert state.all_model_checkpoint_paths == [str(TF_CKPT_DIR / "model.ckpt")]
    assert latest_checkpoint(TF_CKPT_DIR) == str(TF_CKPT_DIR / "model.ckpt")


def test_writes_what_tensorflow_writes(tmp_path):
    write_state(tmp_path, str(tmp_path / "model.ckpt"))
    assert (tmp_path / "checkpoint").read_bytes() == (TF_CKPT_DIR / "checkpoint").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"]          # written atomically: no temp file left


def test_paths_outside_the_directory_stay_as_given(tmp_path):
    elsewhere = str(tmp_path / "other" / "m")
    (tmp_path / "dir").mkdir()
    write_state(tmp_path / "dir", elsewhere, [elsewhere])
    assert f'model_checkpoint_path: "{elsewhere}"' in (tmp_path / "dir" / "checkpoint").read_text()
    assert read_state(tmp_path / "dir").model_checkpoint_path == elsewhere


def test_relative_directory_as_tensorflow_writes_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("ck")
    write_state("ck", "ck/model-1", ["ck/model-0"], relative=False)
    assert parse_state((tmp_path / "ck" / "checkpoint").read_text(), "f").all_model_checkpoint_paths == \
        ["model-0", "model-1"]


def test_latest_checkpoint_needs_the_files(tmp_path):
    assert latest_checkpoint(tmp_path) is None                     # no state file
    write_state(tmp_path, str(tmp_path / "gone"))
    assert latest_checkpoint(tmp_path) is None                     # it names a checkpoint that is not there
    write_bundle(tmp_path / "gone", {"a": np.zeros(1)})
    assert latest_checkpoint(tmp_path) == str(tmp_path / "gone")


def test_retention_keeps_the_newest_n_like_max_to_keep(tmp_path):
    for step in range(1, 6):
        prefix = str(tmp_path / f"model.ckpt-{step}")
        write_bundle(prefix, {"step": np.int64(step)})
        (tmp_path / f"model.ckpt-{step}.meta").write_bytes(b"meta")
        deleted = record_checkpoint(tmp_path, prefix, keep=3)
        assert deleted == ([str(tmp_path / f"model.ckpt-{step - 3}")] if step > 3 else [])
    state = read_state(tmp_path)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == \
        ["model.ckpt-3", "model.ckpt-4", "model.ckpt-5"]
    assert (tmp_path / "checkpoint").read_text().splitlines()[0] == 'model_checkpoint_path: "model.ckpt-5"'
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"] + sorted(
        f"model.ckpt-{s}{suffix}" for s in (3, 4, 5) for suffix in (".data-00000-of-00001", ".index", ".meta"))
    # Saving the same prefix again moves it to the end; keep=0 lists only the latest, deletes nothing.
    record_checkpoint(tmp_path, str(tmp_path / "model.ckpt-3"), keep=3)
    assert read_state(tmp_path).model_checkpoint_path.endswith("model.ckpt-3")
    record_checkpoint(tmp_path, str(tmp_path / "model.ckpt-4"), keep=0)
    assert [os.path.basename(p) for p in read_state(tmp_path).all_model_checkpoint_paths] == ["model.ckpt-4"]
    assert (tmp_path / "model.ckpt-5.index").exists()


def test_escapes_round_trip():
    state = CheckpointState('dir "q"/m\\x\n\u00e9', ["a\tb", "\x01"], [1.5], 2.0)
    text = format_state(state)
    assert '"dir \\"q\\"/m\\\\x\\n\\303\\251"' in text
    assert parse_state(text, "f") == state
    assert parse_state('model_checkpoint_path: \'m\\x41\'  \n# comment\n', "f").model_checkpoint_path == "mA"


@pytest.mark.parametrize("text, message", [
    ("model_checkpoint_path: m\n", "must be a quoted string"),
    ("nonsense\n", "not a checkpoint state line"),
    ("other_field: 1\n", "unknown field 'other_field'"),
    ('model_checkpoint_path: "a\\q"\n', "unknown escape"),
    ("last_preserved_timestamp: soon\n", "must be a number"),
])
def test_malformed_state_names_the_line(text, message):
    with pytest.raises(CheckpointError, match=message) as failure:
        parse_state("\n" + text, "dir/checkpoint")
    assert str(failure.value).startswith("dir/checkpoint:2:")


def test_state_without_a_model_path_or_not_text(tmp_path):
    (tmp_path / "checkpoint").write_text('all_model_checkpoint_paths: "a"\n')
    with pytest.raises(CheckpointError, match="no model_checkpoint_path"):
        read_state(tmp_path)
    (tmp_path / "checkpoint").write_bytes(b"\xff\xfe")
    with pytest.raises(CheckpointError, match="not a text file"):
        latest_checkpoint(tmp_path)
