"""Whole programs in their own interpreter, as a user runs them: the README's example,
Ctrl-C in the middle of an execute, the context-manager form, and what is left after."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={k: v for k, v in os.environ.items() if not k.startswith("ARES_")},
    )


def alive(pid: str) -> bool:
    """Whether the process exists and is not a zombie (an orphan may wait to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def ares_shm_files() -> set:
    return {f for f in os.listdir("/dev/shm") if f.startswith("ares-")}


def test_readme_python_example_runs_as_written():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "the README has a Python example"
    before = ares_shm_files()
    out = run(blocks[0])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip(), "the example prints its results"
    assert ares_shm_files() <= before, "the example's store is gone after it exits"


def test_context_manager_starts_and_stops_the_runtime():
    out = run(
        """
        import ares, ares.tensor as at
        with ares.init(num_cpus=1, object_store_memory="64M"):
            assert ares.is_initialized()
            print(float(at.arange(10, chunk_size=3).sum()))
        assert not ares.is_initialized()
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["45.0"]


def test_ctrl_c_during_execute_interrupts_and_the_session_keeps_working():
    code = """
        import signal, time
        import ares, ares.tensor as at
        # As at a terminal: Ctrl-C raises KeyboardInterrupt even if whatever started
        # the tests ignores SIGINT (a background job does; Python then keeps it ignored).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        ares.init(num_cpus=2, object_store_memory="512M")
        base = ares.node_stats()["store_objects"]
        a = at.random.rand(4000, 4000, chunk_size=500, seed=1)
        print("ready", flush=True)
        started = time.time()
        try:
            # Seconds of GEMMs on two cores: still running when the signal comes.
            (a @ a.T @ a @ a.T).sum().execute(show_progress=False)
            # Says how long it ran, should the signal ever miss it.
            print("finished", round(time.time() - started, 2), flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        assert float(at.ones((10, 10), chunk_size=5).sum()) == 100.0
        # Frees reach the store asynchronously: wait (bounded) for it to settle.
        deadline = time.time() + 20
        while ares.node_stats()["store_objects"] > base and time.time() < deadline:
            time.sleep(0.05)
        print("objects", ares.node_stats()["store_objects"] - base, flush=True)
        ares.shutdown()
        print("stopped", flush=True)
    """
    p = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("ARES_")},
    )
    try:
        assert p.stdout.readline().strip() == "ready"
        # The execute starts right after "ready"; the signal lands inside it.
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == 0, err
    lines = out.split("\n")
    assert "interrupted" in lines, out + err
    # Nothing of the abandoned computation is left in the store.
    objects = [l for l in lines if l.startswith("objects")]
    assert objects == ["objects 0"], out + err
    assert "stopped" in lines


def test_a_driver_killed_leaves_no_process_or_shared_memory():
    before = ares_shm_files()
    p = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import ares, ares.tensor as at, time\n"
            "ares.init(num_cpus=2, object_store_memory='64M')\n"
            "at.ones((100, 100), chunk_size=10).sum().fetch()\n"
            "print('up', flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("ARES_")},
    )
    assert p.stdout.readline().strip() == "up"
    workers = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
    assert workers, "the embedded node started worker processes"
    p.kill()
    p.wait()
    deadline = time.time() + 30
    while time.time() < deadline and any(alive(w) for w in workers):
        time.sleep(0.1)
    assert not any(alive(w) for w in workers), "workers outlived their driver"
    assert ares_shm_files() <= before


def ares_bin() -> str:
    """The `ares` binary scripts/test-all builds (ARES_BIN), else the default dev build."""
    path = os.environ.get("ARES_BIN") or str(ROOT / "target" / "debug" / "ares")
    assert os.path.exists(path), f"{path} is missing: cargo build -p ares-cli --bin ares (or set ARES_BIN)"
    return path


def test_a_python_driver_runs_on_a_daemon_started_with_ares_start(tmp_path):
    # A short root: socket paths under it must fit in a Unix socket address (pytest's
    # tmp_path is too deep; `ares start` refuses it, naming the limit).
    root = Path(tempfile.mkdtemp(prefix="ares-py-"))
    long_root = tmp_path / ("r" * 60)
    refused = subprocess.run([ares_bin(), "start", "--head", "--port", "0", "--session-root", str(long_root)],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "is too long" in refused.stdout + refused.stderr, refused
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARES_")}
    start = subprocess.run(
        [ares_bin(), "start", "--head", "--port", "0", "--node-ip-address", "127.0.0.1", "--num-cpus", "2",
         "--object-store-memory", "256M", "--session-root", str(root)],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert start.returncode == 0, start.stdout + start.stderr
    try:
        out = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(
                """
                import numpy as np, os
                import ares, ares.tensor as at
                ares.init(address="auto")
                x = np.arange(20.0).reshape(4, 5)
                t = at.tensor(x, chunk_size=2)
                np.testing.assert_allclose((t @ t.T).fetch(), x @ x.T)
                print("workers", " ".join(sorted(set(os.path.basename(os.readlink(f"/proc/{p}/exe"))
                      for p in os.popen(f"pgrep -P {os.environ['DAEMON_PID']}").read().split()))))
                ares.shutdown()
                """)],
            capture_output=True, text=True, timeout=120,
            env={**env, "ARES_SESSION_ROOT": str(root), "DAEMON_PID": daemon_pid(start.stdout)},
        )
        assert out.returncode == 0, out.stdout + out.stderr
        # The chunk tasks ran in the daemon's own workers: the `ares` binary, not Python.
        assert out.stdout.split() == ["workers", "ares"], out.stdout
    finally:
        stop = subprocess.run([ares_bin(), "stop", "--session-root", str(root)], capture_output=True, text=True, env=env)
        shutil.rmtree(root, ignore_errors=True)
    assert stop.returncode == 0, stop.stdout + stop.stderr


def daemon_pid(summary: str) -> str:
    """The pid in the `ares: ... (pid N)` line `ares start` prints."""
    m = re.search(r"\(pid (\d+)\)", summary)
    assert m, summary
    return m.group(1)


def test_shutdown_prints_nothing_and_closes_what_it_computed():
    out = run(
        """
        import ares, ares.tensor as at
        for _ in range(8):  # quick starts and stops, workers still registering
            ares.init(num_cpus=2, object_store_memory="64M")
            ares.shutdown()
        ares.init(num_cpus=1, object_store_memory="64M")
        t = (at.arange(10, chunk_size=3) * 2).execute()
        ares.shutdown()
        try:
            t.fetch()
        except ares.SessionClosedError as e:
            print("closed:", e)
        assert not ares.is_initialized(), "a closed tensor does not start a cluster"
        print(float((at.arange(4) + 1).sum()))  # a new expression starts one, as on first use
        ares.shutdown()
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == "", f"shutdown printed: {out.stderr!r}"
    lines = out.stdout.splitlines()
    assert lines[0].startswith("closed: <ares.Session") and lines[1] == "10.0"
