//! A driver program for the exit tests: starts a cluster, prints its worker pids and
//! raylet socket on one line, then exits in the way its first argument names:
//! `exit` (shutdown, then return), `return` (return without shutdown), `panic`, or
//! `wait` (block until killed by a signal).

use std::io::Write;
use std::time::Duration;

#[ares::remote]
fn square(x: i64) -> i64 {
    x * x
}

fn main() -> anyhow::Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "exit".into());
    ares::init_with(ares::Config::default().num_cpus(2))?;
    let refs: Vec<_> = (0..100).map(|i| ares::remote(square).call(i)).collect();
    anyhow::ensure!(ares::get_all(&refs)?.iter().sum::<i64>() == (0..100).map(|i| i * i).sum::<i64>());
    let _big = ares::put(vec![1u8; 8 << 20])?;
    let workers = loop {
        let stats = ares::node_stats()?;
        if stats.workers.len() == 2 {
            break stats.workers;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let pids: Vec<String> = workers.iter().map(|w| w.pid.to_string()).collect();
    println!("{} {}", pids.join(","), ares::raylet_address()?);
    std::io::stdout().flush()?;
    match mode.as_str() {
        "exit" => ares::shutdown(),
        "return" => {}
        "panic" => panic!("the driver panics on purpose"),
        "wait" => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        other => anyhow::bail!("unknown mode {other}"),
    }
    Ok(())
}
