"""SavedModels as command input: every signature runs and matches TensorFlow, keys and tensor names
both work as feeds and fetches, the aliases survive pipes, gradients match tf.GradientTape, and
bad signatures / broken variables fail with one line and the right exit code.

The SavedModels and TensorFlow's results are written by tools/make_saved_model_fixtures.py."""
import json
import shutil

import numpy as np
import pytest
from google.protobuf import text_format

from graphtool.proto.saved_model_pb2 import SavedModel

from .helpers import REPO_ROOT, error_line, run_dftool

MODELS = REPO_ROOT / "tests" / "fixtures" / "saved_models"
TOLERANCE = ("--rtol", "1e-4", "--atol", "1e-5")


def _manifest(case):
    return json.loads((MODELS / case / "manifest.json").read_text())


RUNS = [(case, signature) for case in ("keras_lstm", "module_two_signatures", "module_stateful", "tf1_resource",
                                        "tf1_ref_variables", "tf1_partitioned")
        for signature in _manifest(case)["recorded"]]


def _files(case, signature):
    folder = MODELS / case / signature
    return folder / "feeds.npz", folder / "expected.npz"


@pytest.mark.parametrize("case, signature", RUNS)
def test_every_signature_matches_tensorflow(case, signature):
    feeds, expected = _files(case, signature)
    code, out, err = run_dftool("run", MODELS / case / "model", "--signature", signature, "--feeds", feeds,
                                "--expect", expected, *TOLERANCE)
    assert code == 0, err
    assert "match" in err
    # the default fetches are the signature's outputs, named by their keys
    assert sorted(line.split()[0] for line in out.splitlines()) == \
        sorted(_manifest(case)["signatures"][signature]["outputs"])


def test_feed_by_signature_key_with_default_signature(tmp_path):
    feeds, expected = _files("keras_lstm", "serving_default")
    values = np.load(feeds)
    args = []
    for key in ("input_1", "input_2"):
        np.save(tmp_path / f"{key}.npy", values[key])
        args += ["--feed", f"{key}={tmp_path / f'{key}.npy'}"]
    code, _, err = run_dftool("run", MODELS / "keras_lstm" / "model", *args, "--fetch", "output_0",
                              "--expect", expected, *TOLERANCE)
    assert code == 0, err


def test_feeds_and_fetches_by_tensor_name(tmp_path):
    """The signature's own tensor names (serving_default_x:0, StatefulPartitionedCall:0) work too."""
    feeds, expected = _files("module_two_signatures", "serving_default")
    signature = _manifest("module_two_signatures")["signatures"]["serving_default"]
    by_name = tmp_path / "feeds.npz"
    np.savez(by_name, **{signature["inputs"]["x"]["name"]: np.load(feeds)["x"]})
    fetch = signature["outputs"]["output_0"]["name"]
    code, _, err = run_dftool("run", MODELS / "module_two_signatures" / "model", "--feeds", by_name,
                              "--fetch", fetch, "--output", tmp_path / "out.npz")
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")[fetch], np.load(expected)["output_0"],
                               rtol=1e-4, atol=1e-5)


def test_saved_model_pb_and_pbtxt_paths(tmp_path):
    feeds, expected = _files("tf1_resource", "embed")
    code, _, err = run_dftool("run", MODELS / "tf1_resource" / "model" / "saved_model.pb", "--signature", "embed",
                              "--feeds", feeds, "--expect", expected, *TOLERANCE)
    assert code == 0, err
    copy = tmp_path / "text_model"
    shutil.copytree(MODELS / "tf1_resource" / "model", copy)
    saved = SavedModel()
    saved.ParseFromString((copy / "saved_model.pb").read_bytes())
    (copy / "saved_model.pb").unlink()
    (copy / "saved_model.pbtxt").write_text(text_format.MessageToString(saved))
    code, _, err = run_dftool("run", copy, "--signature", "embed", "--feeds", feeds, "--expect", expected,
                              *TOLERANCE)
    assert code == 0, err


def test_inspect_lists_every_signature():
    code, out, err = run_dftool("inspect", MODELS / "module_two_signatures" / "model", "--json")
    assert code == 0, err
    report = json.loads(out)
    manifest = _manifest("module_two_signatures")["signatures"]
    listed = {s["name"]: s for s in report["saved_model"]["signatures"]}
    assert set(listed) == set(manifest) == {"serving_default", "iterate"}
    for name, signature in listed.items():
        assert signature["method"] == manifest[name]["method"]
        for side in ("inputs", "outputs"):
            assert {t["key"]: (t["tensor"], t["dtype"], t["shape"]) for t in signature[side]} == \
                {k: (v["name"], v["dtype"], v["shape"]) for k, v in manifest[name][side].items()}
    assert report["saved_model"]["signature"] == "serving_default"
    assert report["saved_model"]["variables_frozen"] == 2
    assert [o["name"] for o in report["outputs"]] == ["output_0"]
    assert report["run_command"].endswith("--feed x=x.npy")
    # the text report shows the table too
    code, out, err = run_dftool("inspect", MODELS / "module_two_signatures" / "model", "--signature", "iterate")
    text = out + err
    assert code == 0, err
    assert "* iterate" in text and "serving_default" in text and "ids: int32[?]" in text


def test_assigned_variable_is_restored_each_step_not_frozen():
    """module_stateful's signature bumps a counter: it stays a variable, restored at the start of
    each step, so a run computes what TensorFlow's first call after loading does (calls == 1)."""
    code, out, err = run_dftool("inspect", MODELS / "module_stateful" / "model", "--json")
    assert code == 0, err
    saved = json.loads(out)["saved_model"]
    assert saved["variables_frozen"] == 1 and list(saved["variables_unfrozen"]) == ["calls"]
    assert "AssignAddVariableOp" in saved["variables_unfrozen"]["calls"]
    feeds, expected = _files("module_stateful", "serving_default")
    assert float(np.load(expected)["calls"]) == 1.0
    code, _, err = run_dftool("profile", MODELS / "module_stateful" / "model", "--feeds", feeds, "--repeat", "3",
                              "--warmup", "1", "--json")
    assert code == 0, err
    assert "stays a variable, restored at the start of every step" in " ".join(err.split())


def test_prune_feeds_by_signature_key(tmp_path):
    feeds, expected = _files("module_two_signatures", "iterate")
    code, _, err = run_dftool("prune", MODELS / "module_two_signatures" / "model", tmp_path / "p.pb", "--signature",
                              "iterate", "--fetch", "y", "--feed", "x", "--feed", "n", "--feed", "ids", "--json",
                              "--report", tmp_path / "r.json")
    assert code == 0, err
    fed = {f["tensor"]: f["node"] for f in json.loads((tmp_path / "r.json").read_text())["feeds"]}
    assert fed == {"iterate_x:0": "iterate_x", "iterate_n:0": "iterate_n", "iterate_ids:0": "iterate_ids"}
    code, _, err = run_dftool("run", tmp_path / "p.pb", "--feeds", feeds, "--fetch", "y", "--expect", expected,
                              *TOLERANCE)
    assert code == 0, err


def test_prune_from_saved_model_piped_to_run():
    feeds, expected = _files("keras_lstm", "serving_default")
    code, graph, err = run_dftool("prune", MODELS / "keras_lstm" / "model", "-", "--fetch", "output_0", binary=True)
    assert code == 0, err
    # feeds.npz is keyed input_1, input_2: the keys still name the inputs after the pipe
    code, _, err = run_dftool("run", "-", "--feeds", feeds, "--fetch", "output_0", "--expect", expected,
                              *TOLERANCE, input=graph)
    assert code == 0, err


@pytest.mark.parametrize("case, signature", [("tf1_resource", "serving_default"),
                                             ("tf1_ref_variables", "serving_default"),
                                             ("module_two_signatures", "iterate"),
                                             ("keras_lstm", "serving_default")])
def test_gradients_match_tensorflow(tmp_path, case, signature):
    grads = np.load(MODELS / case / signature / "grads.npz")
    inputs = _manifest(case)["signatures"][signature]["inputs"]
    feeds, _ = _files(case, signature)
    for key in grads.files:
        out_key, in_key = key.split("/")
        x = inputs[in_key]["name"].split(":")[0]
        code, _, err = run_dftool("grad", MODELS / case / "model", tmp_path / "grad.pb", "--signature", signature,
                                  "--y", out_key, "--x", x)
        assert code == 0, err
        code, _, err = run_dftool("run", tmp_path / "grad.pb", "--feeds", feeds, "--fetch", f"grad/{x}",
                                  "--output", tmp_path / "out.npz")
        assert code == 0, err
        np.testing.assert_allclose(np.load(tmp_path / "out.npz")[f"grad/{x}"], grads[key], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case, signature", [("tf1_resource", "serving_default"), ("keras_lstm", "serving_default"),
                                             ("tf1_partitioned", "serving_default")])
def test_place_partition_run_and_optimize(tmp_path, case, signature):
    feeds, expected = _files(case, signature)
    model = MODELS / case / "model"
    code, placed, err = run_dftool("place", model, "-", "--devices", "cpu:0,cpu:1", binary=True)
    assert code == 0, err
    code, parted, err = run_dftool("partition", "-", "-", input=placed, binary=True)
    assert code == 0, err
    code, _, err = run_dftool("run", "-", "--feeds", feeds, "--expect", expected, *TOLERANCE, input=parted)
    assert code == 0, err
    code, _, err = run_dftool("optimize", model, tmp_path / "opt.pb", "--verify", "--feeds", feeds)
    assert code == 0, err
    code, _, err = run_dftool("run", tmp_path / "opt.pb", "--feeds", feeds, "--expect", expected, *TOLERANCE)
    assert code == 0, err


def test_profile_takes_a_signature():
    feeds, _ = _files("tf1_resource", "embed")
    code, _, err = run_dftool("profile", MODELS / "tf1_resource" / "model", "--signature", "embed", "--feeds", feeds,
                              "--repeat", "2", "--warmup", "0", "--json")
    assert code == 0, err


# --- errors ------------------------------------------------------------------------------------

def test_unknown_signature_lists_the_available_ones():
    code, _, err = run_dftool("run", MODELS / "module_two_signatures" / "model", "--signature", "predict")
    assert code == 2
    line = error_line(err)
    assert line.startswith("error: --signature predict: ")
    assert line.endswith("module_two_signatures/model has no such signature (available: iterate, serving_default)")


def test_missing_feed_is_named_by_its_key():
    code, _, err = run_dftool("run", MODELS / "keras_lstm" / "model", "-q")
    assert code == 2
    line = error_line(err)
    expected = {"input_1": "int32 [?,6]", "input_2": "float32 [?,3]"}
    key = "input_1" if "'input_1'" in line else "input_2"     # either may be reported first
    assert line == (f"error: missing feed for signature input '{key}' (placeholder 'serving_default_{key}', "
                    f"{expected[key]}) (hint: pass --feed {key}=FILE.npy or put '{key}' in --feeds)")


def test_signature_on_a_graphdef_is_a_usage_error():
    graph = REPO_ROOT / "tests" / "fixtures" / "tf" / "cond" / "graph.pb"
    code, _, err = run_dftool("inspect", graph, "--signature", "serving_default")
    assert code == 2
    assert "is not a SavedModel" in error_line(err)


def test_directory_without_saved_model(tmp_path):
    code, _, err = run_dftool("inspect", tmp_path)
    assert code == 3
    assert "without saved_model.pb" in error_line(err)


@pytest.fixture
def model_copy(tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(MODELS / "module_two_signatures" / "model", copy)
    return copy


def test_missing_variables_name_the_index(model_copy):
    shutil.rmtree(model_copy / "variables")
    code, _, err = run_dftool("run", model_copy)
    assert code == 3
    assert "variables/variables.index: no such file" in error_line(err)


def test_corrupt_variable_bytes_name_the_data_file(model_copy):
    data = model_copy / "variables" / "variables.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    for i in range(0, len(raw), 7):     # damage every tensor
        raw[i] ^= 0x21
    data.write_bytes(bytes(raw))
    code, _, err = run_dftool("run", model_copy)
    assert code == 3
    line = error_line(err)
    assert "variables.data-00000-of-00001: checksum mismatch for tensor" in line


def test_truncated_index(model_copy):
    index = model_copy / "variables" / "variables.index"
    index.write_bytes(index.read_bytes()[:-10])
    code, _, err = run_dftool("inspect", model_copy)
    assert code == 3
    assert "variables.index: bad magic number" in error_line(err)


def test_missing_data_shard(model_copy):
    (model_copy / "variables" / "variables.data-00000-of-00001").unlink()
    code, _, err = run_dftool("prune", model_copy, "-", "--fetch", "output_0")
    assert code == 3
    assert "variables.data-00000-of-00001: no such file (data shard 1 of 1" in error_line(err)


def test_no_serving_meta_graph(model_copy):
    saved = SavedModel()
    saved.ParseFromString((model_copy / "saved_model.pb").read_bytes())
    del saved.meta_graphs[0].meta_info_def.tags[:]
    saved.meta_graphs[0].meta_info_def.tags.append("train")
    (model_copy / "saved_model.pb").write_bytes(saved.SerializeToString())
    code, _, err = run_dftool("inspect", model_copy)
    assert code == 3
    assert "no MetaGraph tagged 'serve' (tag sets found: train)" in error_line(err)


def test_corrupt_saved_model_pb(model_copy):
    (model_copy / "saved_model.pb").write_bytes(b"\x0a\xff\xff\xff garbage")
    code, _, err = run_dftool("inspect", model_copy)
    assert code == 3
    assert "saved_model.pb: not a valid SavedModel" in error_line(err)


def test_graphdef_named_saved_model_pb(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes((REPO_ROOT / "tests" / "fixtures" / "tf" / "cond" / "graph.pb").read_bytes())
    code, _, err = run_dftool("inspect", tmp_path / "saved_model.pb")
    assert code == 3
    assert "saved_model.pb: the SavedModel holds no MetaGraph (hint: a GraphDef saved under this name?" \
        in error_line(err)


def test_signature_input_that_is_not_a_placeholder(tmp_path):
    """A TF1 signature may name an intermediate tensor as an input: it becomes a Placeholder fed by
    its key (emb = looked_up * 2 once the lookup is cut off)."""
    copy = tmp_path / "model"
    shutil.copytree(MODELS / "tf1_resource" / "model", copy)
    saved = SavedModel()
    saved.ParseFromString((copy / "saved_model.pb").read_bytes())
    signature = saved.meta_graphs[0].signature_def["embed"]
    del signature.inputs["ids"]
    signature.inputs["looked_up"].name = "embedding_lookup_1/Identity:0"
    signature.inputs["looked_up"].dtype = 1
    (copy / "saved_model.pb").write_bytes(saved.SerializeToString())
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "x.npy", value)
    code, _, err = run_dftool("run", copy, "--signature", "embed", "--feed", f"looked_up={tmp_path / 'x.npy'}",
                              "--output", tmp_path / "out.npz")
    assert code == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["emb"], value * 2)


def test_one_key_for_an_input_and_an_output(tmp_path):
    """serving_default renamed so that its output key is 'x', like its input: --feed x feeds the
    input, --fetch x (and the default fetch) is the output."""
    copy = tmp_path / "model"
    shutil.copytree(MODELS / "module_two_signatures" / "model", copy)
    saved = SavedModel()
    saved.ParseFromString((copy / "saved_model.pb").read_bytes())
    outputs = saved.meta_graphs[0].signature_def["serving_default"].outputs
    outputs["x"].CopyFrom(outputs["output_0"])
    del outputs["output_0"]
    (copy / "saved_model.pb").write_bytes(saved.SerializeToString())
    feeds, expected = _files("module_two_signatures", "serving_default")
    np.save(tmp_path / "x.npy", np.load(feeds)["x"])
    for fetch in (("--fetch", "x"), ()):
        code, _, err = run_dftool("run", copy, "--feed", f"x={tmp_path / 'x.npy'}", *fetch, "--output",
                                  tmp_path / "out.npz")
        assert code == 0, err
        np.testing.assert_allclose(np.load(tmp_path / "out.npz")["x"], np.load(expected)["output_0"],
                                   rtol=1e-4, atol=1e-5)
