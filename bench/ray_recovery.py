#!/usr/bin/env python3
"""Ray peer of `ares-bench recovery` (bench/src/recovery.rs): lineage reconstruction.

Usage:
  $PEERS_VENVS/main/bin/python bench/ray_recovery.py [--n 100] [--ms 100] [--out x.jsonl]
                                                    [--only small,10MB]

Per variant, on a fresh two-node Ray cluster on this machine (head = node A, where this
driver runs; node B joined to it; each `--num-cpus 2`): a chain of n tasks of ms ms each,
task i taking task i-1's output as an ObjectRef argument. In the first half, runs of 10
links prefer node A and B in turn (links 10-19, 30-39 ... on B), every other link node A
(NodeAffinitySchedulingStrategy, soft): B's links are mostly consumed on B, so losing B
loses them for good and they must be re-executed, each from its predecessor. The chain runs once
to warm up (not measured), once undisturbed and once with node B SIGKILLed (its whole
process group: `ray start --block`, raylet with its plasma store, workers, agents, log
monitor) when the link before B's last link is ready. The driver keeps a ref to every link
and checks every value afterwards (rebuilt links included).

  small: links are Python ints (inlined in the owner), x -> (x*31 + 7) mod 2^64.
  10MB:  link 0 = np.arange(10 MiB) % 251 as uint8 (made by a task); link i = copy of
         link i-1 with byte (i*4099) % len incremented (wrapping).

The GCS declares a node dead after about 1 s (as `ares --node-timeout-ms 1000`):
RAY_health_check_period_ms=200, RAY_health_check_failure_threshold=5,
RAY_health_check_timeout_ms=500, RAY_health_check_initial_delay_ms=1000, exported to
every Ray process (both nodes and the driver).

Every task execution also appends (run, link, node, pid) to a log file, so the output
reports which links Ray actually re-executed in the failed run (extra fields; the figures
are the wall times only).

Output: JSON lines recovery_{small,10MB}_{plain,failed}_s (s) and recovery_ratio_* (x).
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "peers"))
from _common import emit, loadavg, meta, set_output  # noqa: E402

HEALTH = {
    "RAY_health_check_period_ms": "200",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "5",
    "RAY_health_check_initial_delay_ms": "1000",
}
os.environ.update(HEALTH)
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # 2.5x+ enables token auth by default

import numpy as np  # noqa: E402
import psutil  # noqa: E402
import ray  # noqa: E402
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: E402

BIG = 10 << 20
MASK = (1 << 64) - 1
RAY = os.path.join(os.path.dirname(sys.executable), "ray")


def _log(path, run, i):
    node = ray.get_runtime_context().get_node_id()
    with open(path, "a") as f:
        f.write(f"{run} {i} {node} {os.getpid()}\n")


@ray.remote
def chain_small(prev, run, i, ms, log):
    _log(log, run, i)
    time.sleep(ms / 1000)
    return (prev * 31 + 7) & MASK


@ray.remote
def chain_big_seed(run, i, ms, log):
    _log(log, run, i)
    time.sleep(ms / 1000)
    return (np.arange(BIG) % 251).astype(np.uint8)


@ray.remote
def chain_big(prev, run, i, ms, log):
    _log(log, run, i)
    time.sleep(ms / 1000)
    v = prev.copy()
    k = (i * 4099) % len(v)
    v[k] += np.uint8(1)  # uint8 arithmetic wraps
    return v


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """Head (node A) and node B, each `ray start --block` in its own process group."""

    def __init__(self, store_bytes):
        self.tmp = tempfile.mkdtemp(prefix="rr", dir="/tmp")
        self.log = os.path.join(self.tmp, "exec.log")
        self.procs = {}
        self.port = free_port()
        common = ["--num-cpus", "2", "--object-store-memory", str(store_bytes),
                  "--node-ip-address", "127.0.0.1", "--disable-usage-stats", "--block"]
        self._start("a", ["--head", "--port", str(self.port), "--include-dashboard", "false",
                          "--temp-dir", self.tmp] + common)
        addr = f"127.0.0.1:{self.port}"
        # The driver joins before B exists, so it cannot attach to B's raylet.
        deadline = time.time() + 60
        while True:
            try:
                ray.init(address=addr, _node_ip_address="127.0.0.1", logging_level="ERROR",
                         log_to_driver=False)
                break
            except Exception:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        self.a = ray.get_runtime_context().get_node_id()
        self._start("b", ["--address", addr, "--node-manager-port", str(free_port()),
                          "--object-manager-port", str(free_port()),
                          "--metrics-export-port", str(free_port()),
                          "--dashboard-agent-listen-port", str(free_port()),
                          "--dashboard-agent-grpc-port", str(free_port()),
                          "--runtime-env-agent-port", str(free_port())] + common)
        deadline = time.time() + 60
        while True:
            others = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["NodeID"] != self.a]
            if others:
                self.b = others[0]
                break
            if time.time() > deadline:
                raise RuntimeError("node B never joined")
            time.sleep(0.1)

    def _start(self, name, args):
        out = open(os.path.join(self.tmp, f"start_{name}.log"), "w")
        self.procs[name] = subprocess.Popen([RAY, "start"] + args, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def kill_b(self):
        """SIGKILL every process of node B: the `ray start --block` process group (raylet
        with its plasma store, agents, log monitor) and every descendant of it (Ray puts
        each worker in a process group of its own). Returns the killed processes' names."""
        root = psutil.Process(self.procs["b"].pid)
        tree = [root] + root.children(recursive=True)
        os.killpg(root.pid, signal.SIGKILL)
        names = []
        for p in tree:
            try:
                names.append(p.name())
                p.kill()
            except psutil.Error:
                pass
        return names

    def group_of_b(self):
        pg = self.procs["b"].pid
        root = psutil.Process(pg)
        return [p.name() for p in [root] + root.children(recursive=True)]

    def stop(self):
        try:
            ray.shutdown()
        finally:
            for p in self.procs.values():
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
            subprocess.run([RAY, "stop", "--force"], capture_output=True)
            for _ in range(60):
                if not ray_procs():
                    break
                time.sleep(0.5)
            shutil.rmtree(self.tmp, ignore_errors=True)


def ray_procs():
    """Pids of Ray processes left on the machine (raylet, gcs_server, ray:: workers)."""
    pids = []
    for args in (["-x", "raylet"], ["-x", "gcs_server"], ["-f", "^ray::"]):
        pids += subprocess.run(["pgrep"] + args, capture_output=True, text=True).stdout.split()
    return pids


def run_chain(c, n, ms, run, kill_b, submit):
    on_b = lambda i: i <= n // 2 and (i // 10) % 2 == 1  # noqa: E731
    opts = lambda i: {"scheduling_strategy": NodeAffinitySchedulingStrategy(c.b if on_b(i) else c.a, soft=True)}  # noqa: E731
    t = time.perf_counter()
    links = []
    for i in range(n):
        links.append(submit(links[-1] if links else None, i, opts(i)))
    if kill_b:
        last_b = max(i for i in range(n) if on_b(i))
        ray.wait([links[last_b - 1]], num_returns=1, fetch_local=False)
        c.killed = c.kill_b()
    ray.wait([links[-1]], num_returns=1, fetch_local=False)
    return time.perf_counter() - t, links


def small(c, n, ms, run, kill_b):
    def submit(prev, i, o):
        return chain_small.options(**o).remote(1 if prev is None else prev, run, i, ms, c.log)
    secs, links = run_chain(c, n, ms, run, kill_b, submit)
    want = 1
    for i, l in enumerate(links):
        want = (want * 31 + 7) & MASK
        got = ray.get(l)
        assert got == want, f"small link {i} is wrong: {got} != {want}"
    return secs


def big(c, n, ms, run, kill_b):
    def submit(prev, i, o):
        if prev is None:
            return chain_big_seed.options(**o).remote(run, i, ms, c.log)
        return chain_big.options(**o).remote(prev, run, i, ms, c.log)
    secs, links = run_chain(c, n, ms, run, kill_b, submit)
    want = (np.arange(BIG) % 251).astype(np.uint8)
    for i, l in enumerate(links):
        if i > 0:
            k = (i * 4099) % BIG
            want[k] += np.uint8(1)
        got = ray.get(l)
        assert np.array_equal(got, want), f"10 MiB link {i} is wrong"
        del got
    return secs


def executions(c, run):
    """Link -> list of (node, pid) that executed it in `run`."""
    ex = {}
    try:
        for ln in open(c.log):
            r, i, node, pid = ln.split()
            if r == run:
                ex.setdefault(int(i), []).append((node, pid))
    except FileNotFoundError:
        pass
    return ex


def ratio(name, n, ms, store, chain):
    t0 = time.perf_counter()
    c = Cluster(store)
    extra = {}
    err = None
    try:
        chain(c, n, ms, "warm", False)
        extra["b_tree_after_warm"] = sorted(set(c.group_of_b()))
        plain = chain(c, n, ms, "plain", False)
        try:
            failed = chain(c, n, ms, "failed", True)
        except Exception as e:  # reconstruction failure: report, no number
            failed, err = None, f"{type(e).__name__}: {e}"
        extra["b_killed"] = sorted(set(getattr(c, "killed", [])))
        ex = executions(c, "failed")
        extra["reexecuted_links"] = sorted(i for i, v in ex.items() if len(v) > 1)
        extra["failed_on_b"] = sorted(i for i, v in ex.items() if any(nd == c.b for nd, _ in v))
    finally:
        c.stop()
    common = {"engine": "ray", "ray": ray.__version__, "n": n, "ms": ms, "health": HEALTH}
    emit({"bench": f"recovery_{name}_plain_s", "value": plain, "unit": "s", "runs": [plain],
          "loadavg": loadavg(), **common})
    if err is not None:
        emit({"bench": f"recovery_{name}_failed_s", "value": None, "unit": "s", "runs": [],
              "error": err, "loadavg": loadavg(), **common, **extra})
        emit({"bench": f"recovery_ratio_{name}", "value": None, "unit": "x", "runs": [], "error": err,
              "loadavg": loadavg(), **common})
        return
    emit({"bench": f"recovery_{name}_failed_s", "value": failed, "unit": "s", "runs": [failed],
          "loadavg": loadavg(), **common, **extra})
    emit({"bench": f"recovery_ratio_{name}", "value": failed / plain, "unit": "x", "runs": [failed / plain],
          "loadavg": loadavg(), "variant_wall_s": round(time.perf_counter() - t0, 1), **common})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--ms", type=int, default=100)
    ap.add_argument("--only", default="small,10MB")
    ap.add_argument("--out")
    a = ap.parse_args()
    set_output(a.out)
    emit(meta("ray", ray=ray.__version__, bench="recovery", health=HEALTH))
    only = a.only.split(",")
    try:
        if "small" in only:
            ratio("small", a.n, a.ms, 256 << 20, small)
        if "10MB" in only:
            ratio("10MB", a.n, a.ms, (a.n * 11 + 512) << 20, big)
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True)
        for _ in range(60):
            if not ray_procs():
                break
            time.sleep(0.5)
        left = ray_procs()
        if left:
            print(f"Ray processes left: {left}", file=sys.stderr)


if __name__ == "__main__":
    main()
