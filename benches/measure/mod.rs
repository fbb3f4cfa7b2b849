//! What the benches measure, shared: delays as p50/p99, a process's CPU
//! time split into user and kernel, its resident memory. Read from `/proc`,
//! so Linux only; a process that cannot be read counts as zero.

pub mod affinity;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Prints the p50, p99 and max of `delays` (microseconds).
pub fn report_delay(what: &str, delays: &[u64]) {
    report_delay_of("delay model chunk -> SSE client", what, delays);
}

/// Prints the p50, p99 and max of the delays of `kind`, in `what`.
pub fn report_delay_of(kind: &str, what: &str, delays: &[u64]) {
    let mut sorted = delays.to_vec();
    sorted.sort_unstable();
    let at = |q: f64| {
        let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
        Duration::from_micros(sorted.get(index).copied().unwrap_or(0))
    };
    println!(
        "{kind}, {what}: {} measured, p50 {:?}, p99 {:?}, max {:?}",
        sorted.len(),
        at(0.50),
        at(0.99),
        at(1.0)
    );
}

/// Microseconds since the Unix epoch: the stamp a chunk carries.
pub fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_micros() as u64)
}

/// CPU time spent by the process under measurement (the daemon) and by
/// this process (the model and the clients) from one moment on.
pub struct CpuMeter {
    daemon: u32,
    name: &'static str,
    daemon_at_start: CpuTime,
    bench_at_start: CpuTime,
    started: Instant,
}

/// A process's CPU time: in its own code and in the kernel on its behalf.
#[derive(Clone, Copy, Default)]
struct CpuTime {
    user: Duration,
    system: Duration,
}

impl CpuTime {
    fn total(self) -> Duration {
        self.user + self.system
    }

    fn since(self, start: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(start.user),
            system: self.system.saturating_sub(start.system),
        }
    }
}

impl CpuMeter {
    pub fn start(daemon: u32, name: &'static str) -> CpuMeter {
        CpuMeter {
            daemon,
            name,
            daemon_at_start: cpu_time(daemon),
            bench_at_start: cpu_time(std::process::id()),
            started: Instant::now(),
        }
    }

    /// Prints the CPU time spent since the start, in all and per event.
    pub fn report(self, what: &str, events: u64) {
        let daemon = cpu_time(self.daemon).since(self.daemon_at_start);
        let bench = cpu_time(std::process::id()).since(self.bench_at_start);
        let per_event = |spent: Duration| spent.as_secs_f64() * 1e6 / events.max(1) as f64;
        let elapsed = self.started.elapsed().as_secs_f64();
        println!(
            "CPU, {what}: {:.2} cores busy on average over {elapsed:.2} s",
            (daemon.total() + bench.total()).as_secs_f64() / elapsed
        );
        println!(
            "CPU, {what}: {} {:.2} s = {:.1} us per event delivered ({events} events), \
             {:.1} of them in the kernel; model and clients {:.2} s = {:.1} us per event, \
             {:.1} in the kernel",
            self.name,
            daemon.total().as_secs_f64(),
            per_event(daemon.total()),
            per_event(daemon.system),
            bench.total().as_secs_f64(),
            per_event(bench.total()),
            per_event(bench.system),
        );
    }
}

/// The CPU time (user + system) process `pid` has spent so far, in
/// seconds; 0 when it cannot be read (it exited).
#[allow(dead_code)] // the cluster bench's: it meters several processes at once
pub fn cpu_seconds(pid: u32) -> f64 {
    cpu_time(pid).total().as_secs_f64()
}

/// A process's user and system CPU time so far, from `/proc/PID/stat`.
fn cpu_time(pid: u32) -> CpuTime {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return CpuTime::default();
    };
    // The fields after the command name (in parentheses, which may hold
    // spaces): state is field 3, utime 14 and stime 15.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return CpuTime::default();
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let time = |index: usize| -> Duration {
        let ticks: u64 = fields
            .get(index - 3)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        Duration::from_secs_f64(ticks as f64 / clock_ticks_per_second())
    };
    CpuTime {
        user: time(14),
        system: time(15),
    }
}

/// `getconf CLK_TCK`: the unit of the times in `/proc/PID/stat`.
fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// Resident memory of a process, from `/proc`.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
