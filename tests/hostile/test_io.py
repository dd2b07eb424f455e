"""Hostile files, signals and pipes around reading and writing (issue 14, area io).

Each test runs the real entry point (`python -m cli.main`) in a subprocess, as a user would, except
where a fault has to be injected (a MemoryError, a full disk during the rename) and the in-process
`main()` / `write_atomic` is used instead.
"""
from __future__ import annotations

import errno
import os
import resource
import signal
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.builder import GraphBuilder
from graphtool.errors import RuntimeFailure
from tests.helpers import (F32, REPO_ROOT, const_def, error_line, graph_def, node_def, run_dftool, serialize,
                           write_graph)

ROOT = os.geteuid() == 0


def _env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200", **extra}


def _dftool(*args, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cli.main", *map(str, args)], cwd=REPO_ROOT, env=_env(),
                            **popen)


def _small_graph(tmp_path, name="g.pb") -> str:
    return write_graph(graph_def(const_def("w", np.arange(6, dtype=np.float32).reshape(2, 3)),
                                 node_def("y", "Identity", ["w"], T=F32)), tmp_path / name)


def _big_graph(tmp_path, megabytes: int, name="big.pb") -> str:
    weights = np.random.default_rng(0).standard_normal(megabytes << 18).astype(np.float32)
    return write_graph(graph_def(const_def("w", weights), node_def("y", "Identity", ["w"], T=F32)),
                       tmp_path / name)


def _temps(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# --- defect 1: special files as OUT ----------------------------------------------------------------

def _device(tmp_path, name: str, minor: int) -> str:
    """/dev/NAME (character device 1,MINOR) to write to. As root, a private node in tmp_path: a
    regression (temp file and rename) would replace the machine's own /dev/NAME."""
    if not ROOT:
        return f"/dev/{name}"
    device = tmp_path / name
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    except OSError as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    return str(device)


def test_a_device_is_written_through_not_replaced(tmp_path):
    device = _device(tmp_path, "null", 3)
    code, _, stderr = run_dftool("prune", _small_graph(tmp_path), device, "--fetch", "y", "-q")
    assert code == 0, stderr
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert _temps(tmp_path) == []


def test_a_full_device_is_one_line_exit_1(tmp_path):
    device = _device(tmp_path, "full", 7)
    code, _, stderr = run_dftool("prune", _small_graph(tmp_path), device, "--fetch", "y", "-q")
    assert code == 1
    line = error_line(stderr)
    assert device in line and "No space left" in line
    assert stat.S_ISCHR(os.stat(device).st_mode)


def test_a_fifo_is_written_through(tmp_path):
    graph = _small_graph(tmp_path)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    code, _, stderr = run_dftool("prune", graph, fifo, "--fetch", "y", "-q")
    reader.join(timeout=30)
    assert code == 0, stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert received and graph_io.parse_graphdef(received[0]).node[0].name == "w"


def test_a_symlink_stays_and_its_target_is_replaced(tmp_path):
    graph = _small_graph(tmp_path)
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.pb"
    target.write_bytes(b"old")
    target.chmod(0o640)
    link = tmp_path / "link.pb"
    link.symlink_to(target)
    code, _, stderr = run_dftool("prune", graph, link, "--fetch", "y", "-q")
    assert code == 0, stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert graph_io.load_graphdef(str(target)).node[0].name == "w"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the replaced file's mode is kept
    assert _temps(tmp_path) == [] and _temps(tmp_path / "real") == []


def test_a_read_only_out_is_refused_and_untouched(tmp_path):
    graph = _small_graph(tmp_path)
    out = tmp_path / "ro.pb"
    out.write_bytes(b"keep me")
    out.chmod(0o444)
    code, _, stderr = run_dftool("prune", graph, out, "--fetch", "y", "-q")
    assert code == 2
    line = error_line(stderr)
    assert str(out) in line and "read-only" in line
    assert out.read_bytes() == b"keep me" and stat.S_IMODE(out.stat().st_mode) == 0o444


@pytest.mark.parametrize("where, message", [
    ("{tmp}", "is a directory"),
    ("/proc/self/dftool-out.pb", "under /proc"),
    ("/sys/dftool-out.pb", "under /sys"),
    ("{tmp}/missing/out.pb", "does not exist"),
])
def test_an_impossible_output_path_is_exit_2(tmp_path, where, message):
    out = where.format(tmp=tmp_path)
    code, _, stderr = run_dftool("prune", _small_graph(tmp_path), out, "--fetch", "y", "-q")
    assert code == 2
    line = error_line(stderr)
    assert out in line and message in line


def test_a_report_to_a_directory_is_exit_2(tmp_path):
    code, _, stderr = run_dftool("prune", _small_graph(tmp_path), tmp_path / "o.pb", "--fetch", "y",
                                 "--report", tmp_path, "-q")
    assert code == 2 and "is a directory" in error_line(stderr)


# --- defect 4: endless inputs ----------------------------------------------------------------------

def _at_most_3_gib():
    # The address space of the child: reading an endless stream unboundedly fails inside it
    # (and cannot take the machine's memory) instead of passing slowly.
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def test_an_endless_device_as_graph_stops_at_the_bound():
    proc = _dftool("inspect", "/dev/urandom", "--max-input-bytes", "64M", stdin=subprocess.DEVNULL,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_at_most_3_gib)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3
    line = error_line(stderr.decode())
    assert "/dev/urandom" in line and "64.0 MiB" in line


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_a_stream_of_zero_bytes_is_refused_at_once(source):
    """/dev/zero cannot be the start of anything dftool reads: refused after its first 4 KiB, not
    after the default 2 GiB bound has been buffered."""
    zeros = subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE) if source == "stdin" else None
    start = time.monotonic()
    proc = _dftool("inspect", "/dev/zero" if source == "file" else "-",
                   stdin=zeros.stdout if zeros else subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, preexec_fn=_at_most_3_gib)
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        if zeros:
            zeros.stdout.close()
            zeros.kill()
            zeros.wait()
    assert proc.returncode == 3 and time.monotonic() - start < 20
    line = error_line(stderr.decode())
    assert ("/dev/zero" if source == "file" else "<stdin>") in line and "zero bytes" in line


def test_an_endless_stdin_stops_at_the_bound():
    zeros = subprocess.Popen(["yes", "node {"], stdout=subprocess.PIPE)
    proc = _dftool("inspect", "-", "--max-input-bytes", "64M", stdin=zeros.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   preexec_fn=_at_most_3_gib)
    zeros.stdout.close()
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        zeros.kill()
        zeros.wait()
    assert proc.returncode == 3
    assert "<stdin>" in error_line(stderr.decode()) and "64.0 MiB" in stderr.decode()


def test_input_bound_from_option_environment_and_group(tmp_path):
    graph = _big_graph(tmp_path, 1)  # 1 MiB of weights
    assert run_dftool("inspect", graph, "--max-input-bytes", "2M")[0] == 0
    for args in (["inspect", graph, "--max-input-bytes", "100K"], ["--max-input-bytes", "100K", "inspect", graph]):
        code, _, stderr = run_dftool(*args)
        assert code == 3 and graph in error_line(stderr) and "100.0 KiB" in stderr
    proc = subprocess.run([sys.executable, "-m", "cli.main", "inspect", graph], cwd=REPO_ROOT, capture_output=True,
                          env=_env(DFTOOL_MAX_INPUT_BYTES="100K"), stdin=subprocess.DEVNULL)
    assert proc.returncode == 3 and "100.0 KiB" in error_line(proc.stderr.decode())


@pytest.mark.parametrize("option", ["--max-input-bytes", "--max-tensor-bytes"])
@pytest.mark.parametrize("size", ["lots", "0", "-5", "3Q"])
def test_a_bad_size_is_exit_2(tmp_path, option, size):
    code, _, stderr = run_dftool("inspect", _small_graph(tmp_path), option, size)
    assert code == 2 and option in error_line(stderr)


def test_saved_model_proto_read_is_bounded(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "saved_model.pb").write_bytes(b"\x00" * (300 << 10))
    code, _, stderr = run_dftool("inspect", model, "--max-input-bytes", "100K")
    assert code == 3
    assert "saved_model.pb" in error_line(stderr) and "input bound" in stderr


# --- defect 6: binary GraphDefs that start like JSON -------------------------------------------------

def _graph_starting_with(first: int) -> bytes:
    """A binary GraphDef whose bytes begin b"\\n" + chr(first): its first node is `first` bytes long
    (field 1, length-delimited: tag 0x0a, a newline, then the length)."""
    for pad in range(1, 200):
        name = "n" * pad
        data = serialize(graph_def(const_def(name), node_def("y", "Identity", [name], T=F32)))
        if data[0] == 0x0A and data[1] == first:
            return data
    raise AssertionError("no padding gives that length")


@pytest.mark.parametrize("first", [ord("{"), ord("[")])
def test_binary_graph_that_looks_like_json_loads(tmp_path, first):
    data = _graph_starting_with(first)
    assert data.lstrip()[:1] == bytes([first])
    for name in ("g.pb", "g.bin"):
        (tmp_path / name).write_bytes(data)
        code, _, stderr = run_dftool("inspect", tmp_path / name)
        assert code == 0, stderr
    code, out, stderr = run_dftool("inspect", "-", input=data)
    assert code == 0 and "2 nodes" in out + stderr, stderr
    # dftool's own outputs of such a graph (which begin the same way) read back.
    code, pruned, stderr = run_dftool("prune", tmp_path / "g.pb", "-", "--fetch", "y", "-q", binary=True)
    assert code == 0 and pruned[:2] == data[:2], stderr
    code, placed, stderr = run_dftool("place", "-", "-", "-q", input=pruned, binary=True)
    assert code == 0, stderr
    (tmp_path / "placed.pb").write_bytes(placed)
    assert run_dftool("inspect", tmp_path / "placed.pb")[0] == 0
    assert run_dftool("run", "-", "--fetch", "y", input=placed)[0] == 0


def test_real_json_is_still_refused(tmp_path):
    (tmp_path / "g.pb").write_text('  {"node": [{"name": "a", "op": "Const"}]}')
    code, _, stderr = run_dftool("inspect", tmp_path / "g.pb")
    assert code == 3 and "JSON" in error_line(stderr)


# --- defect 9: temp files after signals, stale temps ----------------------------------------------

def _stop_during_write(proc, directory, deadline: float) -> str | None:
    """Poll until proc's temp file appears in `directory`, then SIGSTOP it there. The temp name
    if the process was frozen with its temp file present, else None (it got past the write)."""
    while time.monotonic() < deadline and proc.poll() is None:
        temps = _temps(directory)
        if temps:
            proc.send_signal(signal.SIGSTOP)
            return temps[0] if _temps(directory) else None
        time.sleep(0.0005)
    return None


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_a_signal_during_a_write_leaves_no_temp_and_out_untouched(tmp_path, signum, code):
    graph = _big_graph(tmp_path, 48)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "o.pb"
    out.write_bytes(b"previous")
    for _ in range(3):  # the write lasts a few tens of ms: catching it may take another try
        proc = _dftool("prune", graph, out, "--fetch", "y", "-q", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            temp = _stop_during_write(proc, out_dir, time.monotonic() + 60)
            if temp is None:
                out.write_bytes(b"previous")
                continue
            assert temp == f".o.pb.dftool-{proc.pid}.tmp"
            proc.send_signal(signum)
            proc.send_signal(signal.SIGCONT)
            _, stderr = proc.communicate(timeout=30)
            assert proc.returncode == code
            error_line(stderr.decode())
            assert _temps(out_dir) == []
            assert out.read_bytes() == b"previous"
            return
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    pytest.skip("the write finished before it could be caught three times")


def test_stale_temps_of_dead_runs_are_removed(tmp_path):
    graph = _small_graph(tmp_path)
    out = tmp_path / "o.pb"
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".o.pb.dftool-{dead.pid}.tmp"
    alive = tmp_path / f".o.pb.dftool-{os.getpid()}.tmp"  # a run still going: not ours to remove
    foreign = tmp_path / ".o.pb.other.tmp"
    for path in (stale, alive, foreign):
        path.write_bytes(b"partial")
    code, _, stderr = run_dftool("prune", graph, out, "--fetch", "y", "-q")
    assert code == 0, stderr
    assert not stale.exists() and alive.exists() and foreign.exists()
    assert graph_io.load_graphdef(str(out)).node[0].name == "w"


@pytest.mark.parametrize("fault", [KeyboardInterrupt(), SystemExit(1), OSError(errno.ENOSPC, "No space left on device")])
def test_a_fault_inside_the_write_leaves_no_temp(tmp_path, monkeypatch, fault):
    out = tmp_path / "o.pb"
    out.write_bytes(b"previous")

    def fail(fd):
        raise fault

    monkeypatch.setattr(os, "fsync", fail)
    expected = RuntimeFailure if isinstance(fault, OSError) else type(fault)
    with pytest.raises(expected):
        graph_io.write_atomic(str(out), b"new contents")
    assert out.read_bytes() == b"previous"
    assert _temps(tmp_path) == [] and not graph_io._pending_temps


# --- defect 11: Ctrl-C at any moment ----------------------------------------------------------------

def _handlers_installed(pid: int) -> bool:
    """True once the process catches SIGTERM (which only dftool's handler does): from then on
    every signal is dftool's to report. Before it, the interpreter itself is starting (~50 ms)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    except OSError:
        return False
    return False


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.3, 1.0])
def test_ctrl_c_prints_one_line_and_exits_130(tmp_path, delay):
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc to see when the handler is installed")
    b = GraphBuilder()
    (i,) = b.while_loop(lambda i: b.greater(i, -1), lambda i: [b.add(i, 1)], [b.const(0)], name="forever")
    b.identity(i, name="out")
    path = tmp_path / "forever.pb"
    path.write_bytes(b.to_graphdef().SerializeToString())
    proc = _dftool("run", path, "--timeout", "60", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not _handlers_installed(proc.pid) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.001)
    time.sleep(delay)  # 0 and 0.05: during the imports; 1.0: while the loop runs
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert (proc.returncode, stderr.decode()) == (130, "error: interrupted\n")


# --- defect 12: broken pipe ----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["optimize", "{big}", "-", "-q"],
                                  ["run", "{big}", "--fetch", "y", "--output", "-", "-q"]])
def test_a_closed_stdout_is_exit_1_with_one_line(tmp_path, args):
    big = _big_graph(tmp_path, 8)
    proc = _dftool(*[a.format(big=big) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.Popen(["head", "-c", "1"], stdin=proc.stdout, stdout=subprocess.DEVNULL)
    proc.stdout.close()
    head.wait(timeout=60)
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert proc.returncode == 1
    assert error_line(stderr) == "error: stdout closed before the output was written (broken pipe)"


# --- defect 8 (io part): MemoryError --------------------------------------------------------------------

@pytest.mark.parametrize("where, code", [("graphtool.loader.from_graphdef", 3),
                                         ("graphtool.prune.prune", 1)])
def test_memory_error_is_one_line(tmp_path, monkeypatch, capsys, where, code):
    import importlib

    from cli.main import main

    module, name = where.rsplit(".", 1)

    def exhausted(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(importlib.import_module(module), name, exhausted)
    out = tmp_path / "o.pb"
    out.write_bytes(b"previous")
    assert main(["prune", _small_graph(tmp_path), str(out), "--fetch", "y"]) == code
    line = error_line(capsys.readouterr().err)
    assert line.startswith("error: out of memory") and "internal error" not in line
    assert out.read_bytes() == b"previous"


@pytest.mark.parametrize("option, where", [("--dump-dir", "/proc/dftool-dump"), ("--dump-dir", "{graph}/sub"),
                                           ("--split-dir", "/sys/dftool-split"), ("--split-dir", "{graph}")])
def test_an_impossible_output_directory_is_exit_2(tmp_path, option, where):
    graph = _small_graph(tmp_path)
    if option == "--split-dir":  # partition wants a placed graph
        assert run_dftool("place", graph, tmp_path / "placed.pb", "-q")[0] == 0
        graph = str(tmp_path / "placed.pb")
    where = where.format(graph=graph)
    command = ["optimize", graph, tmp_path / "o.pb"] if option == "--dump-dir" else ["partition", graph, tmp_path / "o.pb"]
    code, _, stderr = run_dftool(*command, option, where, "-q")
    assert code == 2
    assert option in error_line(stderr) and where in stderr


def test_an_unwritable_directory_is_a_usage_error(tmp_path, monkeypatch):
    """(As root every directory is writable: the refusal the kernel would give is simulated.)"""
    from graphtool.errors import UsageError

    out = tmp_path / "o.pb"
    real_open = os.open

    def refuse_temp_files(path, flags, *args, **kwargs):
        if str(path).endswith(".tmp"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_temp_files)
    with pytest.raises(UsageError, match=f"{out}: cannot create a file in {tmp_path}"):
        graph_io.write_atomic(str(out), b"data")
    assert list(tmp_path.iterdir()) == [] and not graph_io._pending_temps
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    out.write_bytes(b"old")
    out.chmod(0o644)
    with pytest.raises(UsageError, match="read-only"):
        graph_io.write_atomic(str(out), b"data")
    assert out.read_bytes() == b"old"


def test_saved_model_variables_index_read_is_bounded(tmp_path):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(REPO_ROOT / "tests" / "fixtures" / "saved_models" / "tf1_resource" / "model", model)
    index = model / "variables" / "variables.index"
    index.unlink()
    index.symlink_to("/dev/urandom")
    proc = _dftool("inspect", model, "--max-input-bytes", "64M", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, preexec_fn=_at_most_3_gib)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert "variables.index" in error_line(stderr.decode()) and "64.0 MiB" in stderr.decode()


def test_an_endless_cost_model_stops_at_the_bound(tmp_path):
    proc = _dftool("place", _small_graph(tmp_path), tmp_path / "o.pb", "--cost-model", "/dev/zero",
                   "--max-input-bytes", "16M", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, preexec_fn=_at_most_3_gib)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert "cost model '/dev/zero'" in error_line(stderr.decode())
    assert not (tmp_path / "o.pb").exists()
