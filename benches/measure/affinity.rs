//! Which cores the daemon and the load (the scripted model and the
//! clients: this process) run on, so that the daemon's figures are its own
//! and not those of a machine it shares with its load.
//!
//! `AGENTBUS_BENCH_DAEMON_CPUS` and `AGENTBUS_BENCH_LOAD_CPUS` name them
//! (`0,1`, `2-7`); by default the cores this process may use are split in
//! two, the first half for the daemon (one core each on a 2-core machine;
//! the same core for both on one). Set by the bench itself: this process
//! before its runtime starts (every thread it makes inherits it), the
//! daemon between its fork and its exec.

use std::collections::BTreeSet;

/// The daemon's cores and the load's.
pub struct Affinity {
    pub daemon: Vec<usize>,
    pub load: Vec<usize>,
}

impl Affinity {
    /// As the environment says, else half and half. Exits naming the
    /// variable when one does not parse or names a core this process may
    /// not use.
    pub fn from_env() -> Affinity {
        let usable = usable_cpus();
        let half = usable.len().div_ceil(2).max(1);
        let (first, rest) = usable.split_at(half.min(usable.len()));
        let rest = if rest.is_empty() { first } else { rest };
        Affinity {
            daemon: cpus_from_env("AGENTBUS_BENCH_DAEMON_CPUS", &usable)
                .unwrap_or_else(|| first.to_vec()),
            load: cpus_from_env("AGENTBUS_BENCH_LOAD_CPUS", &usable)
                .unwrap_or_else(|| rest.to_vec()),
        }
    }

    /// Pin this process (its threads made from now on) to the load's cores.
    pub fn pin_load(&self) {
        if let Err(e) =
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set(&self.load))
        {
            eprintln!(
                "bench: could not pin the load to cores {:?}: {e}",
                self.load
            );
            std::process::exit(1);
        }
    }

    /// What the output says about it.
    pub fn describe(&self) -> String {
        let shared = self.daemon.iter().any(|c| self.load.contains(c));
        format!(
            "daemon on cores {} ({}), load (model and clients) on cores {}{}",
            list(&self.daemon),
            self.daemon.len(),
            list(&self.load),
            if shared {
                " — SHARED with the daemon"
            } else {
                ""
            }
        )
    }
}

/// A core set as `sched_setaffinity` takes it.
pub fn set(cpus: &[usize]) -> nix::sched::CpuSet {
    let mut set = nix::sched::CpuSet::new();
    for &cpu in cpus {
        // A core past the set's size was refused when it was read.
        let _ = set.set(cpu);
    }
    set
}

/// The cores this process may run on.
fn usable_cpus() -> Vec<usize> {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..nix::sched::CpuSet::count())
            .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
            .collect(),
        Err(_) => vec![0],
    }
}

/// `0,1` or `2-7,9` from `name`, each core one this process may use.
fn cpus_from_env(name: &str, usable: &[usize]) -> Option<Vec<usize>> {
    let text = std::env::var(name).ok().filter(|t| !t.trim().is_empty())?;
    let mut cpus = BTreeSet::new();
    for part in text.split(',').map(str::trim) {
        let range = match part.split_once('-') {
            Some((from, to)) => from
                .trim()
                .parse::<usize>()
                .ok()
                .zip(to.trim().parse().ok()),
            None => part.parse().ok().map(|cpu| (cpu, cpu)),
        };
        let Some((from, to)) = range.filter(|(from, to)| from <= to) else {
            eprintln!("bench: {name}={text}: expected cores like `0,1` or `2-7`");
            std::process::exit(2);
        };
        cpus.extend(from..=to);
    }
    if let Some(cpu) = cpus.iter().find(|cpu| !usable.contains(cpu)) {
        eprintln!(
            "bench: {name}={text}: core {cpu} is not one this process may use ({})",
            list(usable)
        );
        std::process::exit(2);
    }
    Some(cpus.into_iter().collect())
}

fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}
