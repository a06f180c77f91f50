//! Random programs over many seeds (`ARES_SIM_SEEDS`, default 1000; `ARES_SIM_SEED=n`
//! runs one), after the committed regression seeds. A failing seed prints itself; add
//! it to `regressions.txt` once fixed.

use ares_sim::program::{self, ProgramConfig};

fn run_seed(seed: u64) -> Result<program::Summary, String> {
    program::run(&ProgramConfig::for_seed(seed))
}

fn regressions() -> Vec<u64> {
    include_str!("regressions.txt")
        .lines()
        .filter_map(|l| l.split('#').next())
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[test]
fn random_programs_resolve_every_get_and_leak_nothing() {
    let seeds: Vec<u64> = match std::env::var("ARES_SIM_SEED") {
        Ok(s) => vec![s.parse().expect("ARES_SIM_SEED is a number")],
        Err(_) => {
            let n: u64 = std::env::var("ARES_SIM_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(1000);
            regressions().into_iter().chain(0..n).collect()
        }
    };
    let (mut gets, mut kills, mut breaks, mut delivered) = (0, 0, 0, 0);
    let (mut borrowed_reads, mut owners_killed, mut nodes_killed) = (0, 0, 0);
    let (mut spilled, mut restored, mut actors, mut actor_calls, mut races) = (0, 0, 0, 0, 0);
    for seed in &seeds {
        match run_seed(*seed) {
            Ok(s) => {
                gets += s.gets;
                kills += s.kills;
                breaks += s.breaks;
                delivered += s.delivered;
                borrowed_reads += s.borrowed_reads;
                owners_killed += s.owners_killed;
                nodes_killed += s.nodes_killed;
                spilled += s.spilled_bytes;
                restored += s.restored;
                actors += s.actors;
                actor_calls += s.actor_calls;
                races += s.create_races;
            }
            Err(e) => panic!(
                "sim seed {seed} failed: {e}\nreplay: ARES_SIM_SEED={seed} cargo test -p ares-sim --test properties"
            ),
        }
    }
    eprintln!(
        "{} seeds: {gets} gets and {borrowed_reads} borrowed reads checked, {kills} workers and {owners_killed} \
         owners and {nodes_killed} nodes killed, {breaks} connections broken, {delivered} messages, \
         {spilled} bytes spilled, {restored} objects restored, {actors} actors and {actor_calls} of their calls, {races} creates of one object in flight at once",
        seeds.len()
    );
    // The runs must have exercised what they claim to.
    if seeds.len() >= 100 {
        assert!(gets > 0 && kills > 0 && breaks > 0, "the programs exercised too little");
        assert!(borrowed_reads > 0 && owners_killed > 0, "the programs borrowed or killed owners too little");
        assert!(nodes_killed > 0, "the programs killed no node");
        assert!(spilled > 0 && restored > 0, "the programs spilled or restored nothing");
        assert!(actors > 0 && actor_calls > 0, "the programs spawned or called no actor");
        assert!(
            races > 0,
            "no two creates of one object were in flight at once; pick regression seeds that race again \
             (cargo test --release -p ares-sim --test properties list_racing_seeds -- --ignored --nocapture)"
        );
    }
}

#[test]
fn a_seed_replays_exactly() {
    for seed in [3, 17] {
        let a = run_seed(seed).unwrap();
        let b = run_seed(seed).unwrap();
        assert_eq!(
            (a.gets, a.delivered, a.kills, a.breaks, a.borrowed_reads, a.actor_calls),
            (b.gets, b.delivered, b.kills, b.breaks, b.borrowed_reads, b.actor_calls)
        );
    }
}

/// Prints the seeds whose programs had two creates of one object in flight at once.
#[test]
#[ignore]
fn list_racing_seeds() {
    for seed in 0..2000 {
        if let Ok(s) = run_seed(seed)
            && s.create_races > 0
        {
            eprintln!("race seed {seed}");
        }
    }
}
