//! Task failures and bad requests: panics, worker deaths, unknown functions, infeasible
//! resources. Each gives a typed error at `get`; nothing hangs.

use std::time::Duration;

use ares::{Error, TaskError};
use ares_tests::{Cluster, wait_for};

#[ares::remote]
fn boom(x: i64) -> i64 {
    if x >= 0 {
        panic!("boom {x}");
    }
    x
}

#[ares::remote]
fn inc(x: i64) -> i64 {
    x + 1
}

/// First attempt: records its pid in `marker` and waits to be killed. A retry finds the
/// marker and returns its own pid at once.
#[ares::remote]
fn die_once(marker: String) -> u32 {
    let me = std::process::id();
    if !std::path::Path::new(&marker).exists() {
        let tmp = format!("{marker}.tmp");
        std::fs::write(&tmp, me.to_string()).unwrap();
        std::fs::rename(&tmp, &marker).unwrap();
        std::thread::sleep(Duration::from_secs(120));
    }
    me
}

fn not_registered() -> i64 {
    1
}

fn marker(name: &str) -> String {
    let p = std::env::temp_dir().join(format!("ares-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p.to_string_lossy().into_owned()
}

fn read_pid(marker: &str) -> i32 {
    wait_for("the task to record its pid", Duration::from_secs(60), || std::path::Path::new(marker).exists());
    std::fs::read_to_string(marker).unwrap().trim().parse().unwrap()
}

#[test]
fn panicking_task_gives_application_error_with_message() {
    let _c = Cluster::default_2cpu();
    let r = ares::remote(boom).call(7);
    match ares::get(&r) {
        Err(Error::Task(TaskError::Application { message, function })) => {
            assert!(message.contains("boom 7"), "{message}");
            assert!(function.ends_with("boom"), "{function}");
        }
        other => panic!("expected an application error, got {other:?}"),
    }
    // Dependents see the same error; the runtime keeps working.
    let dep = ares::remote(inc).call(&r);
    assert!(matches!(ares::get(&dep), Err(Error::Task(TaskError::Application { .. }))));
    assert_eq!(ares::get(&ares::remote(boom).call(-3)).unwrap(), -3);
}

#[test]
fn killed_worker_is_retried_on_a_new_worker() {
    let _c = Cluster::default_2cpu();
    let m = marker("kill-retry");
    let r = ares::remote(die_once).call(m.clone());
    let victim = read_pid(&m);
    rustix::process::kill_process(rustix::process::Pid::from_raw(victim).unwrap(), rustix::process::Signal::KILL)
        .unwrap();
    let survivor = ares::get(&r).expect("retried after the worker died");
    assert_ne!(survivor as i32, victim);
    // The pool replaced the dead worker.
    assert_eq!(ares::get(&ares::remote(inc).call(1)).unwrap(), 2);
    // The dead worker's socket is gone: one socket per live worker.
    let session = std::path::PathBuf::from(ares::raylet_address().unwrap()).parent().unwrap().to_path_buf();
    let sockets = || {
        std::fs::read_dir(&session)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("worker-"))
            .count()
    };
    wait_for("the dead worker's socket to be removed", Duration::from_secs(30), || {
        sockets() == ares::node_stats().unwrap().workers.len()
    });
    std::fs::remove_file(&m).unwrap();
}

#[test]
fn worker_death_beyond_max_retries_gives_worker_died() {
    let _c = Cluster::default_2cpu();
    let m = marker("kill-final");
    let opts = ares::TaskOptions::new().max_retries(0);
    let r = ares::remote(die_once).options(opts).call(m.clone());
    let victim = read_pid(&m);
    rustix::process::kill_process(rustix::process::Pid::from_raw(victim).unwrap(), rustix::process::Signal::KILL)
        .unwrap();
    match ares::get(&r) {
        Err(Error::Task(TaskError::WorkerDied { attempts: 1, function })) => assert!(function.ends_with("die_once")),
        other => panic!("expected WorkerDied, got {other:?}"),
    }
    std::fs::remove_file(&m).unwrap();
}

#[test]
fn unknown_function_is_named() {
    let _c = Cluster::default_2cpu();
    let r = ares::remote(not_registered).call();
    match ares::get(&r) {
        Err(Error::Task(TaskError::FunctionNotFound { name })) => assert!(name.ends_with("not_registered"), "{name}"),
        other => panic!("expected FunctionNotFound, got {other:?}"),
    }
    let msg = ares::get(&r).unwrap_err().to_string();
    assert!(msg.contains("#[ares::remote]"), "the error says how to fix it: {msg}");
}

#[test]
fn infeasible_request_fails_at_get_naming_the_resources() {
    let _c = Cluster::default_2cpu();
    let gpu = ares::remote(inc).options(ares::TaskOptions::new().resource("GPU", 1.0)).call(1);
    match ares::get(&gpu) {
        Err(Error::Task(TaskError::Infeasible { missing, .. })) => assert!(missing.contains("GPU"), "{missing}"),
        other => panic!("expected Infeasible, got {other:?}"),
    }
    let cpus = ares::remote(inc).options(ares::TaskOptions::new().num_cpus(64.0)).call(1);
    let msg = ares::get(&cpus).unwrap_err().to_string();
    assert!(msg.contains("CPU: 64") && msg.contains("CPU: 2"), "{msg}");
    // Feasible work still runs.
    assert_eq!(ares::get(&ares::remote(inc).call(1)).unwrap(), 2);
}

#[test]
fn node_affinity_runs_on_the_named_node_or_fails_infeasible_unless_soft() {
    let _c = Cluster::default_2cpu();
    let here = ares::node_id().unwrap();
    let stats = ares::node_stats().unwrap();
    assert_eq!(stats.node_id, here);
    assert_eq!(stats.total.get_units(&here.resource_name()), 10_000, "each node holds one unit of node:<id>");
    let pinned = ares::remote(inc).options(ares::TaskOptions::new().node_affinity(here, false)).call(1);
    assert_eq!(ares::get(&pinned).unwrap(), 2);
    // A node that is not in the cluster: a hard affinity can never run, a soft one runs here.
    let elsewhere = ares::NodeId([7; 16]);
    let hard = ares::remote(inc).options(ares::TaskOptions::new().node_affinity(elsewhere, false)).call(1);
    match ares::get(&hard) {
        Err(Error::Task(TaskError::Infeasible { missing, .. })) => {
            assert!(missing.contains(&elsewhere.resource_name()), "{missing}")
        }
        other => panic!("expected Infeasible, got {other:?}"),
    }
    let soft = ares::remote(inc).options(ares::TaskOptions::new().node_affinity(elsewhere, true)).call(1);
    assert_eq!(ares::get(&soft).unwrap(), 2);
}

#[test]
fn double_init_and_use_after_shutdown_are_typed_errors() {
    let _c = Cluster::default_2cpu();
    assert!(matches!(ares::init(), Err(Error::AlreadyInitialized)));
    let kept = ares::put(5i64).unwrap();
    ares::shutdown();
    assert!(matches!(ares::put(1i64), Err(Error::NotInitialized)));
    assert!(matches!(ares::node_stats(), Err(Error::NotInitialized)));
    // Values owned before shutdown stay readable from memory; dropping them is harmless.
    assert_eq!(ares::get(&kept).unwrap(), 5);
}

/// `ares::fail` reaches the caller as the task's error, like a panic, but the worker
/// prints no panic report for it (an expected failure, such as a singular matrix, is not
/// a crash); a real panic is still reported.
#[test]
fn a_failed_task_reports_its_message_without_a_panic_report() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ares-test-driver")).arg("fail").output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].contains("fail_or_panic") && lines[0].ends_with("the data does not parse: line 3"), "{stdout}");
    assert!(lines[1].ends_with("an unexpected panic"), "{stdout}");
    assert!(!stderr.contains("the data does not parse"), "a report of the quiet failure:\n{stderr}");
    assert!(stderr.contains("an unexpected panic"), "the panic is not reported:\n{stderr}");
}
