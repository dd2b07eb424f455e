"""Summary ops against TensorFlow's own output, event files read back by TensorBoard's reader, and
finding the summary tensor a run fetches.

Fixtures: tests/fixtures/summaries/, made by tools/make_summary_fixtures.py with TensorFlow 2.21
(cases.json: per case TensorFlow's serialized Summary or its error message; graphs/<case>.pb; a
merged-summary training graph and an event file TensorFlow's FileWriter wrote for it).
"""
from __future__ import annotations

import base64
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import graphtool as gt
from graphtool import dtypes
from graphtool.errors import DftoolError, RuntimeFailure, UsageError
from graphtool.exec.kernels.summary import DEFAULT_BUCKET_LIMITS, histogram_proto
from graphtool.exec.session import Session
from graphtool.ir.export import to_graphdef
from graphtool.ops import registry
from graphtool.ops.summary import SUMMARY_OPS
from graphtool.proto import event_pb2, summary_pb2
from graphtool.summary import EventLog, find_summary_tensor, find_summary_tensors

from tests.helpers import while_loop_graph

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "summaries"
CASES = json.loads((FIXTURES / "cases.json").read_text())["cases"]
MERGED = json.loads((FIXTURES / "merged.json").read_text())


def _run_case(case: dict) -> bytes:
    graph = gt.load(FIXTURES / "graphs" / f"{case['name']}.pb")
    value = Session(graph).run([case["fetch"]]).values[0]
    assert value.dtype == object and value.shape == ()
    return bytes(value.item())


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)))


def _assert_same_summary(ours: bytes, theirs: bytes) -> None:
    """Equal Summaries: byte for byte, except PNG images (Pillow's and libpng's zlib streams
    differ), which must have equal headers and equal decoded pixels."""
    mine, tf = summary_pb2.Summary.FromString(ours), summary_pb2.Summary.FromString(theirs)
    has_images = any(v.WhichOneof("value") == "image" for v in tf.value)
    if not has_images:
        assert ours == theirs, f"\nours:\n{mine}\nTensorFlow:\n{tf}"
        return
    assert len(mine.value) == len(tf.value)
    for a, b in zip(mine.value, tf.value):
        if b.WhichOneof("value") != "image":
            assert a == b
            continue
        assert a.tag == b.tag
        assert (a.image.height, a.image.width, a.image.colorspace) == \
            (b.image.height, b.image.width, b.image.colorspace)
        np.testing.assert_array_equal(_pixels(a.image.encoded_image_string), _pixels(b.image.encoded_image_string),
                                      err_msg=f"pixels of {b.tag}")


@pytest.mark.parametrize("case", [c for c in CASES if "summary_b64" in c], ids=lambda c: c["name"])
def test_summary_matches_tensorflow(case):
    if case["op"] == "ImageSummary" or case["name"].startswith(("image", "merge_mixed")):
        pytest.importorskip("PIL")
    _assert_same_summary(_run_case(case), base64.b64decode(case["summary_b64"]))


@pytest.mark.parametrize("case", [c for c in CASES if "error" in c], ids=lambda c: c["name"])
def test_summary_errors_match_tensorflow(case):
    with pytest.raises(DftoolError) as caught:
        _run_case(case)
    message = caught.value.one_line()
    assert case["error"] in message
    assert case["error_node"] in message
    assert "Traceback" not in message


def test_fixtures_cover_every_summary_op():
    covered = {registry.get(n.op).name for c in CASES for n in gt.load(FIXTURES / "graphs" / f"{c['name']}.pb").nodes
               if n.op in SUMMARY_OPS}
    assert covered == SUMMARY_OPS - {"AudioSummary"}   # the deprecated v1 op: see the next test


def test_v1_audio_summary_takes_its_rate_from_an_attr():
    """AudioSummary (deprecated since GraphDef version 15; TensorFlow 2.21 builds only V2) gives
    what AudioSummaryV2 gives for the same rate."""
    case = next(c for c in CASES if c["name"] == "audio_stereo")
    graph = gt.load(FIXTURES / "graphs" / "audio_stereo.pb")
    v2 = graph.get("AudioSummaryV2")
    graph.add_node("AudioSummary", "v1", inputs=list(v2.inputs[:2]),
                   attrs={"sample_rate": 8000.5, "max_outputs": 3})
    value = Session(graph).run(["v1:0"]).values[0]
    assert bytes(value.item()) == base64.b64decode(case["summary_b64"])


# --- histograms ---------------------------------------------------------------------------

def test_default_buckets_are_tensorflows():
    limits = DEFAULT_BUCKET_LIMITS
    assert limits[0] == -np.finfo(np.float64).max and limits[-1] == np.finfo(np.float64).max
    middle = len(limits) // 2
    assert limits[middle] == 0.0 and limits[middle + 1] == 1e-12
    np.testing.assert_array_equal(limits[:middle], -limits[middle + 1:][::-1])
    assert np.all(np.diff(limits) > 0)
    assert limits[-2] < 1e20 <= limits[-2] * 1.1


def test_histogram_folds_empty_buckets():
    proto = histogram_proto(np.array([1.0, 1.0, -3.0]))
    assert (proto.min, proto.max, proto.num, proto.sum, proto.sum_squares) == (-3.0, 1.0, 3.0, -1.0, 11.0)
    counts = list(proto.bucket)
    assert counts.count(2.0) == 1 and counts.count(1.0) == 1 and sum(counts) == 3.0
    # Empty runs are single entries: no two empty buckets in a row.
    assert all(counts[i] or counts[i + 1] for i in range(len(counts) - 1))
    assert proto.bucket_limit[-1] == np.finfo(np.float64).max


def test_empty_histogram_has_one_bucket():
    proto = histogram_proto(np.zeros([0]))
    assert list(proto.bucket) == [0.0] and list(proto.bucket_limit) == [np.finfo(np.float64).max]
    assert proto.min == np.finfo(np.float64).max and proto.max == -np.finfo(np.float64).max


# --- registry -------------------------------------------------------------------------------

@pytest.mark.parametrize("op", sorted(SUMMARY_OPS))
def test_summary_ops_output_a_scalar_string_on_cpu_and_gpu(op):
    from graphtool.exec import kernels

    spec = registry.get(op)
    assert [a.fixed_type.name for a in spec.outputs] == ["string"]
    assert kernels.has_kernel(op, kernels.CPU) and kernels.has_kernel(op, kernels.GPU)


def test_image_summary_bad_color_default_is_red():
    node = gt.load(FIXTURES / "graphs" / "image_uint8.pb").get("pics")
    np.testing.assert_array_equal(node.attr("bad_color"), [255, 0, 0, 255])


# --- find_summary_tensor --------------------------------------------------------------------

def test_finds_tensorflows_merge_all():
    graph = gt.load(FIXTURES / "merged_graph.pb")
    assert find_summary_tensor(graph) == MERGED["merged_tensor"]
    assert find_summary_tensors(graph) == [MERGED["merged_tensor"]]


def test_finds_a_single_summary():
    assert find_summary_tensor(gt.load(FIXTURES / "graphs" / "scalar_float.pb")) == "loss:0"


def test_no_summaries_gives_none():
    graph = gt.load(Path(__file__).resolve().parent.parent / "sample_graphs" / "mlp.pb")
    assert find_summary_tensor(graph) is None and find_summary_tensors(graph) == []


def test_unmerged_summaries_are_listed():
    graph = gt.load(FIXTURES / "graphs" / "merge_duplicate.pb")
    graph.remove_node(graph.get("MergeSummary"))
    assert find_summary_tensors(graph) == ["ScalarSummary:0", "ScalarSummary_1:0"]
    with pytest.raises(UsageError, match="2 summary outputs"):
        find_summary_tensor(graph)


def test_summaries_inside_a_loop_cannot_be_fetched():
    from tests.helpers import const

    graph = while_loop_graph()
    # In the loop body, a constant hangs off the loop's Identity by a control edge (as TF builds it).
    inner_tag = const(graph, "while/tag", b"x", dtype=dtypes.string, control_inputs=[graph.get("while/Identity")])
    graph.add_node("ScalarSummary", "while/loss", inputs=[inner_tag.output(0), graph.get("while/mul").output(0)],
                   attrs={"T": dtypes.float32})
    tag = const(graph, "tag", b"y", dtype=dtypes.string)
    graph.add_node("ScalarSummary", "outside", inputs=[tag.output(0), graph.get("result").output(0)],
                   attrs={"T": dtypes.float32})
    graph.verify()
    assert find_summary_tensors(graph) == ["outside:0"]


def test_a_summary_merged_through_identity_is_merged():
    graph = gt.load(FIXTURES / "graphs" / "merge_duplicate.pb")
    merge = graph.get("MergeSummary")
    first = graph.get("ScalarSummary")
    passed = graph.add_node("Identity", "passed", inputs=[first.output(0)], attrs={"T": dtypes.string})
    merge.set_input(0, passed.output(0))
    assert find_summary_tensors(graph) == ["MergeSummary:0"]


# --- event files ----------------------------------------------------------------------------

def _accumulator(logdir: Path):
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={"images": 0, "histograms": 0,
                                                                         "scalars": 0})
    acc.Reload()
    return acc


def _train_and_log(logdir: Path) -> list[bytes]:
    """Run the merged-summary graph for three steps in dftool, logging as TF's fixture did."""
    graph = gt.load(FIXTURES / "merged_graph.pb")
    session = Session(graph)
    session.run([], targets=[MERGED["init"]])
    feeds = {name: np.array(value, np.float32) for name, value in MERGED["feeds"].items()}
    tf_acc = _accumulator(FIXTURES / "tf_events")
    run_metadata = tf_acc.RunMetadata(MERGED["run_metadata_tag"]).SerializeToString()
    summaries = []
    with EventLog(logdir) as log:
        log.add_graph(to_graphdef(graph).SerializeToString())
        for step in MERGED["event_steps"]:
            value = session.run([MERGED["merged_tensor"]], feeds, targets=[MERGED["train"]]).values[0]
            summaries.append(bytes(value.item()))
            log.add_summary(summaries[-1], step)
            if step == 2:
                log.add_run_metadata(run_metadata, MERGED["run_metadata_tag"], step)
    return summaries


def test_event_file_reads_back_like_tensorflows(tmp_path):
    pytest.importorskip("tensorboard")
    summaries = _train_and_log(tmp_path)
    ours, theirs = _accumulator(tmp_path), _accumulator(FIXTURES / "tf_events")
    for kind in ("scalars", "histograms", "run_metadata"):
        assert sorted(ours.Tags()[kind]) == sorted(theirs.Tags()[kind])
    assert ours.Tags()["graph"] and theirs.Tags()["graph"]
    # The losses: step 1 bit for bit; later steps after dftool's own updates, within float32 noise.
    mine = [(e.step, e.value) for e in ours.Scalars("loss")]
    tf = [(e.step, e.value) for e in theirs.Scalars("loss")]
    assert [s for s, _ in mine] == [s for s, _ in tf] == MERGED["event_steps"]
    assert mine[0] == tf[0]
    np.testing.assert_allclose([v for _, v in mine], [v for _, v in tf], rtol=1e-5)
    histograms = ours.Histograms("w")
    assert [h.step for h in histograms] == MERGED["event_steps"]
    assert histograms[0].histogram_value.num == 3
    first = summary_pb2.Summary.FromString(summaries[0])
    assert first.SerializeToString() == base64.b64decode(MERGED["summaries_b64"][0])
    assert ours.RunMetadata(MERGED["run_metadata_tag"]) == theirs.RunMetadata(MERGED["run_metadata_tag"])
    graph_def = ours.Graph()
    assert {n.name for n in graph_def.node} == {n.name for n in theirs.Graph().node}


def test_event_file_records_with_our_schema(tmp_path):
    """The raw records parse as dftool's own Event messages (TensorFlow's field numbers)."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing import event_file_loader

    scalar = summary_pb2.Summary()
    scalar.value.add(tag="x", simple_value=2.5)
    with EventLog(tmp_path) as log:
        log.add_summary(scalar.SerializeToString(), 7)
    (path,) = tmp_path.iterdir()
    assert path.name.startswith("events.out.tfevents.")
    records = list(event_file_loader.RawEventFileLoader(str(path)).Load())
    events = [event_pb2.Event.FromString(r) for r in records]
    assert events[0].file_version == "brain.Event:2"
    assert events[1].step == 7 and events[1].summary == scalar and events[1].wall_time > 0


def test_image_and_audio_summaries_show_in_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    pytest.importorskip("PIL")
    image_case = next(c for c in CASES if c["name"] == "image_uint8")
    audio_case = next(c for c in CASES if c["name"] == "audio_stereo")
    with EventLog(tmp_path) as log:
        log.add_summary(_run_case(image_case), 3)
        log.add_summary(_run_case(audio_case), 3)
    acc = _accumulator(tmp_path)
    assert sorted(acc.Tags()["images"]) == ["pics/image/0", "pics/image/1"]
    image = acc.Images("pics/image/1")[0]
    assert (image.step, image.width, image.height) == (3, 5, 4)
    assert sorted(acc.Tags()["audio"]) == ["sound/audio/0", "sound/audio/1"]


def test_event_log_without_tensorboard_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard.summary.writer.event_file_writer", None)
    with pytest.raises(UsageError) as caught:
        EventLog(tmp_path)
    assert "dftool[tensorboard]" in caught.value.one_line()


def test_event_log_refuses_an_unusable_logdir(tmp_path):
    pytest.importorskip("tensorboard")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(UsageError, match="cannot write event files to"):
        EventLog(blocker / "logs")


def test_event_log_refuses_bytes_that_are_not_a_summary(tmp_path):
    pytest.importorskip("tensorboard")
    with EventLog(tmp_path) as log:
        with pytest.raises(RuntimeFailure, match="merged:0: the value is not a serialized Summary"):
            log.add_summary(b"\x0a\x05ab", 1, source="merged:0")


def test_closed_event_log(tmp_path):
    pytest.importorskip("tensorboard")
    log = EventLog(tmp_path)
    log.close()
    log.close()
    with pytest.raises(RuntimeFailure, match="closed"):
        log.add_graph(b"")


def test_event_log_never_imports_tensorflow(tmp_path):
    pytest.importorskip("tensorboard")
    with EventLog(tmp_path) as log:
        log.flush()
    assert "tensorflow" not in sys.modules
