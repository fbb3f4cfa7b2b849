//! The cluster bench's figures: percentiles of a list of durations, the
//! machine's load average (other people's builds share these two cores, so
//! every phase says how busy the machine was), and the CPU time of every
//! process of the cluster over a phase — each node, the NATS server,
//! Postgres and the bench itself (the scripted model and the clients).
//!
//! Reads `/proc`, so Linux only; never fails: what cannot be read counts as
//! zero, and the figures say so where it matters.

use crate::harness::Node;
use crate::measure::cpu_seconds;
use std::time::{Duration, Instant};

/// p50, p99 and max of some measurements, and how many there were.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spread {
    pub count: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Spread {
    /// The spread of `values` (microseconds), with the serve bench's rule
    /// for a percentile: the value at index round((n - 1) * q).
    pub fn of_micros(values: &[u64]) -> Spread {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let at = |q: f64| {
            let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
            Duration::from_micros(sorted.get(index).copied().unwrap_or(0))
        };
        Spread {
            count: sorted.len(),
            p50: at(0.50),
            p99: at(0.99),
            max: at(1.0),
        }
    }

    /// `p50 X, p99 Y, max Z` in seconds, for failover times.
    pub fn seconds(&self) -> String {
        format!(
            "p50 {:.2} s, p99 {:.2} s, max {:.2} s",
            self.p50.as_secs_f64(),
            self.p99.as_secs_f64(),
            self.max.as_secs_f64()
        )
    }

    /// `p50 X, p99 Y, max Z` in milliseconds, for delays, and how many.
    pub fn millis(&self) -> String {
        format!(
            "p50 {:.2} ms, p99 {:.2} ms, max {:.1} ms ({} measured)",
            self.p50.as_secs_f64() * 1e3,
            self.p99.as_secs_f64() * 1e3,
            self.max.as_secs_f64() * 1e3,
            self.count
        )
    }
}

/// The load average (1, 5 and 15 minutes) as `/proc/loadavg` says it.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// Prints the load average at a phase's start or end, and keeps it for
/// the summary ([`loads`]).
pub fn mark_load(phase: &str, when: &str) {
    let load = load_average();
    println!("load average at the {when} of {phase}: {load}");
    LOADS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(format!("{phase}, {when}: {load}"));
}

/// Every load average [`mark_load`] printed, in order.
pub fn loads() -> Vec<String> {
    LOADS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

static LOADS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// One process the bench meters, by name.
#[derive(Clone, Debug)]
pub struct Metered {
    pub name: String,
    pub pid: u32,
    /// An `agentbus serve` node (summed as "the daemons").
    pub node: bool,
}

/// The processes of a cluster that every phase meters, besides its nodes.
#[derive(Clone, Copy, Debug)]
pub struct Meter {
    pub nats_pid: Option<u32>,
    pub postgres_port: Option<u16>,
}

impl Meter {
    /// Starts metering `nodes`, the NATS server, Postgres and this process
    /// (the scripted model and the clients).
    pub fn start(&self, nodes: &[Node]) -> CpuMeters {
        let mut processes: Vec<Metered> = nodes
            .iter()
            .map(|node| Metered {
                name: node.name.clone(),
                pid: node.server.pid(),
                node: true,
            })
            .collect();
        if let Some(pid) = self.nats_pid {
            processes.push(Metered {
                name: "nats-server".to_string(),
                pid,
                node: false,
            });
        }
        processes.push(Metered {
            name: "bench (model, clients)".to_string(),
            pid: std::process::id(),
            node: false,
        });
        CpuMeters::start(processes, self.postgres_port)
    }
}

/// The CPU time of several processes from one moment on.
pub struct CpuMeters {
    processes: Vec<Metered>,
    postgres_port: Option<u16>,
    at_start: Vec<f64>,
    postgres_at_start: f64,
    started: Instant,
}

impl CpuMeters {
    /// Start metering `processes` (and, when `postgres_port` is given, the
    /// test kit's Postgres server on that port: its postmaster and its live
    /// backends).
    pub fn start(processes: Vec<Metered>, postgres_port: Option<u16>) -> CpuMeters {
        let at_start = processes.iter().map(|p| cpu_seconds(p.pid)).collect();
        CpuMeters {
            postgres_at_start: postgres_port.map_or(0.0, postgres_cpu_seconds),
            processes,
            postgres_port,
            at_start,
            started: Instant::now(),
        }
    }

    /// Prints each process's CPU seconds since the start, and how many of
    /// the machine's cores all of them kept busy on average; with `events`
    /// delivered meanwhile, also the nodes' (summed) and Postgres's CPU
    /// time per event.
    pub fn report(&self, what: &str, events: u64) -> Spent {
        let elapsed = self.started.elapsed().as_secs_f64();
        let mut parts = Vec::new();
        let mut spent = Spent::default();
        let mut total = 0.0;
        for (process, start) in self.processes.iter().zip(&self.at_start) {
            let seconds = (cpu_seconds(process.pid) - start).max(0.0);
            total += seconds;
            if process.node {
                spent.nodes += seconds;
            }
            parts.push(format!("{} {seconds:.2} s", process.name));
        }
        if let Some(port) = self.postgres_port {
            spent.postgres = (postgres_cpu_seconds(port) - self.postgres_at_start).max(0.0);
            total += spent.postgres;
            parts.push(format!("postgres {:.2} s", spent.postgres));
        }
        spent.cores = total / elapsed.max(1e-9);
        println!(
            "CPU, {what}: {} over {elapsed:.2} s ({:.2} cores busy on average)",
            parts.join(", "),
            spent.cores
        );
        if events > 0 {
            spent.per_event = Some((
                spent.nodes * 1e6 / events as f64,
                spent.postgres * 1e6 / events as f64,
            ));
            println!(
                "CPU per event delivered ({events}), {what}: nodes {:.1} us (summed), postgres \
                 {:.1} us",
                spent.nodes * 1e6 / events as f64,
                spent.postgres * 1e6 / events as f64
            );
        }
        spent
    }
}

/// The CPU time a phase took, as [`CpuMeters::report`] says it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spent {
    /// Seconds, all nodes together.
    pub nodes: f64,
    /// Seconds, Postgres (its postmaster and live backends).
    pub postgres: f64,
    /// Cores kept busy on average by every metered process.
    pub cores: f64,
    /// Microseconds per event delivered: the nodes', Postgres's.
    pub per_event: Option<(f64, f64)>,
}

/// CPU seconds of the Postgres server listening on `port`: its postmaster
/// and the processes it forked that are still alive (a backend that exited
/// took its time with it).
fn postgres_cpu_seconds(port: u16) -> f64 {
    let Some(postmaster) = postmaster_pid(port) else {
        return 0.0;
    };
    let children: f64 = all_pids()
        .filter(|pid| parent_of(*pid) == Some(postmaster))
        .map(cpu_seconds)
        .sum();
    cpu_seconds(postmaster) + children
}

fn all_pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
}

/// The postmaster started by the test kit with `-p PORT`.
fn postmaster_pid(port: u16) -> Option<u32> {
    let port = port.to_string();
    all_pids().find(|pid| {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            return false;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        args.first()
            .is_some_and(|program| program.ends_with(b"postgres"))
            && args
                .windows(2)
                .any(|pair| pair[0] == b"-p" && pair[1] == port.as_bytes())
    })
}

/// Field 4 of `/proc/PID/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}
