//! The main job: Monte Carlo π with 1000 remote tasks of 10⁶ points each, on the embedded
//! one-node cluster. Prints π, tasks/s and the wall time.
//!
//! `cargo run --release -p ares --example pi [-- TASKS POINTS_PER_TASK]`

use std::time::Instant;

/// Counts how many of `n` pseudo-random points of the unit square fall inside the
/// quarter circle. Each task has its own seed, so the result is reproducible.
#[ares::remote]
fn count_inside(seed: u64, n: u64) -> u64 {
    // splitmix64: fast, and good enough for Monte Carlo. Each task starts at a hashed
    // point of the 2^64 cycle, so the streams of different seeds do not overlap.
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    let mut s = mix(seed ^ 0x5851_F42D_4C95_7F2D);
    let mut next = move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(s)
    };
    let scale = 1.0 / (1u64 << 53) as f64;
    let mut inside = 0;
    for _ in 0..n {
        let x = (next() >> 11) as f64 * scale;
        let y = (next() >> 11) as f64 * scale;
        inside += (x * x + y * y <= 1.0) as u64;
    }
    inside
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let tasks: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let points: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1_000_000);
    ares::init()?;
    let start = Instant::now();
    let refs: Vec<_> = (0..tasks).map(|seed| ares::remote(count_inside).call(seed, points)).collect();
    let inside: u64 = ares::get_all(&refs)?.iter().sum();
    let wall = start.elapsed().as_secs_f64();
    let pi = 4.0 * inside as f64 / (tasks * points) as f64;
    println!("pi ≈ {pi:.6} from {} points in {tasks} tasks", tasks * points);
    println!(
        "wall time {wall:.3} s, {:.0} tasks/s, {:.1} M points/s",
        tasks as f64 / wall,
        (tasks * points) as f64 / wall / 1e6
    );
    ares::shutdown();
    Ok(())
}
