"""`dftool inspect CKPT`: a checkpoint's tensors by prefix, .index or data shard; the
inspect_checkpoint JSON report against its schema; bad checkpoints are one error line (exit 3)."""
import json
import shutil

from .helpers import REPO_ROOT, error_line, run_dftool
from .test_report_schemas import validation_errors

TF_CKPT = REPO_ROOT / "tests" / "fixtures" / "checkpoints" / "tf_saver" / "ckpt" / "model.ckpt"
DFTOOL_CKPT = REPO_ROOT / "tests" / "fixtures" / "checkpoints" / "dftool_written" / "ckpt" / "model.ckpt"


def test_table_lists_every_tensor():
    code, out, err = run_dftool("inspect", TF_CKPT)
    assert code == 0, err
    assert out.splitlines()[0] == f"checkpoint {TF_CKPT}: 13 tensors, 5,428 bytes in 1 data shard"
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[3:] if line.strip()}
    assert rows["embedding"] == ["float32", "[6,4]", "96", "3"]
    assert rows["global_step"] == ["int64", "[]", "8"]
    assert rows["vocab"][:2] == ["string", "[4]"] and rows["empty"][:3] == ["float32", "[0,3]", "0"]
    assert rows["big"] == ["float32", "[32,40]", "5,120"]


def test_json_report_by_index_or_data_file_validates(tmp_path):
    for target in (f"{DFTOOL_CKPT}.index", f"{DFTOOL_CKPT}.data-00001-of-00002"):
        code, out, err = run_dftool("inspect", target, "--json")
        assert code == 0, err
        report = json.loads(out)
        assert validation_errors("inspect_checkpoint", report) == []
        assert report["schema"] == "dftool.inspect_checkpoint/1" and report["command"] == "inspect"
        assert report["checkpoint"] == str(DFTOOL_CKPT) and len(report["data_files"]) == 2 and report["format"] == "V2"
        tensors = {t["name"]: t for t in report["tensors"]}
        assert tensors["emb"] == {"name": "emb", "dtype": "float32", "shape": [5, 2], "bytes": 40, "parts": 2}
        assert tensors["names"]["dtype"] == "string" and report["tensor_count"] == len(tensors) == 11


def test_corrupt_and_missing_checkpoints_are_one_error_line(tmp_path):
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(f"{TF_CKPT}{suffix}", tmp_path / f"m{suffix}")
    index = tmp_path / "m.index"
    data = bytearray(index.read_bytes())
    data[10] ^= 0xFF
    index.write_bytes(bytes(data))
    code, _, err = run_dftool("inspect", tmp_path / "m")
    assert code == 3 and "checksum mismatch in data block" in error_line(err) and "m.index" in err
    (tmp_path / "m.index").write_bytes(b"short")
    code, _, err = run_dftool("inspect", tmp_path / "m.index")
    assert code == 3 and "truncated" in error_line(err)


def test_signature_with_a_checkpoint_is_a_usage_error():
    code, _, err = run_dftool("inspect", TF_CKPT, "--signature", "x")
    assert code == 2 and "a checkpoint has none" in error_line(err)


def test_a_v1_checkpoint_file_is_listed():
    v1 = REPO_ROOT / "tests" / "fixtures" / "checkpoints" / "legacy_ops" / "save_slices.ckpt"
    code, out, err = run_dftool("inspect", v1, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert validation_errors("inspect_checkpoint", report) == []
    assert report["format"] == "V1" and report["index_file"] == str(v1) and report["data_files"] == []
    tensors = {t["name"]: t for t in report["tensors"]}
    assert tensors["p"]["shape"] == [4, 2] and tensors["p"]["parts"] == 2 and tensors["q"]["parts"] == 0
    assert tensors["v"]["parts"] == 1            # a slice of [3] saved: part of a tensor, not the whole
    code, out, _ = run_dftool("inspect", v1)
    assert code == 0 and out.splitlines()[0].endswith("3 tensors, 104 bytes (V1 format, one file)")
