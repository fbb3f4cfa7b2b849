//! The end of a cluster bench run: every figure once more as a table to
//! paste into the README (with the date, the commit, the machine's load and
//! Postgres's settings), the verdict on lost and duplicated events, and the
//! exit status — non-zero when an event was lost, duplicated or made up,
//! when a failover never happened, or when a phase could not be done.

use crate::audit::Audit;
use crate::figures::{Spread, loads};
use crate::{failover, latency, throughput};
use agentbus_testkit::postgres::TestDatabase;
use std::process::ExitCode;

/// What the run measured so far.
pub struct Summary {
    pub date: String,
    pub commit: String,
    pub postgres: String,
    pub failovers: Vec<failover::Figures>,
    pub latency: Option<latency::Figures>,
    pub throughput: Vec<throughput::Run>,
    /// Work the bench could not do.
    not_done: Vec<String>,
}

impl Summary {
    pub fn begin() -> Summary {
        Summary {
            date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
            commit: commit(),
            postgres: String::new(),
            failovers: Vec::new(),
            latency: None,
            throughput: Vec::new(),
            not_done: Vec::new(),
        }
    }

    /// Records (and prints at once) work that could not be done.
    pub fn not_done(&mut self, problem: String) {
        println!("NOT DONE: {problem}");
        self.not_done.push(problem);
    }

    /// Prints the summary; the exit status.
    pub fn print(&self) -> ExitCode {
        println!("\n==================== cluster bench summary ====================");
        println!(
            "{}, commit {}, {} cores, release build; Postgres: {}",
            self.date,
            self.commit,
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            self.postgres
        );
        println!("load average (1, 5, 15 min):");
        for load in loads() {
            println!("  {load}");
        }
        println!("\n| what | figure |\n|---|---|");
        let mut audit = Audit::default();
        for f in &self.failovers {
            audit.add(&f.audit);
            let sessions = format!("{} sessions, {} kills", f.sessions, f.kills);
            row(
                &format!(
                    "failover after `kill -9` of the owner, {}: kill → `owner_changed` at a \
                     client of another node",
                    f.lease
                ),
                &format!("{} ({sessions})", spread(&f.seen_us).seconds()),
            );
            row(
                "the same, kill → `owner_changed` stamped by the adopter (its `at`)",
                &spread(&f.stored_us).seconds(),
            );
            row(
                "the same, kill → the answer to the next query at that client",
                &spread(&f.answered_us).seconds(),
            );
            if !f.reconnected_seen_us.is_empty() {
                row(
                    "the same, a client of the killed node reconnected to the third: kill → \
                     `owner_changed`",
                    &format!(
                        "{} ({} clients)",
                        spread(&f.reconnected_seen_us).seconds(),
                        f.reconnected_seen_us.len()
                    ),
                );
            }
            let adopters: Vec<String> = f
                .adopters
                .iter()
                .map(|(node, n)| format!("{node} {n}"))
                .collect();
            row("sessions adopted, by node", &adopters.join(", "));
        }
        row(
            "events lost / duplicated (every client of every failover against the `events` table)",
            &format!(
                "{} / {} (and {} received but not stored, {} differing from the table, {} out of \
                 order; {} clients, {} of them reconnected, {} rows checked)",
                audit.lost,
                audit.duplicated,
                audit.not_stored,
                audit.differing,
                audit.out_of_order,
                audit.clients,
                audit.reconnected_clients,
                audit.events_checked
            ),
        );
        if let Some(l) = &self.latency {
            row(
                &format!(
                    "model chunk → SSE client, one session ({} turns of {} chunks {} ms apart), \
                     client of the owner / of another node (p50 / p99)",
                    l.alone_turns,
                    latency::CHUNKS,
                    latency::PACE_MS
                ),
                &format!(
                    "owner {}; other node {}",
                    p50_p99(&l.alone_on_owner),
                    p50_p99(&l.alone_elsewhere)
                ),
            );
            row(
                &format!(
                    "the same, {} sessions at once over 3 nodes, clients of other nodes / of the \
                     owners (p50 / p99)",
                    l.sessions
                ),
                &format!(
                    "other nodes {}; owners {}",
                    p50_p99(&l.many_elsewhere),
                    p50_p99(&l.many_on_owner)
                ),
            );
            if l.chunks_missing > 0 {
                row(
                    "stamped chunks that never reached a client",
                    &l.chunks_missing.to_string(),
                );
            }
        }
        for run in &self.throughput {
            let rates: Vec<String> = run.rates.iter().map(|r| format!("{r:.0}")).collect();
            row(
                &format!(
                    "events delivered to SSE clients, every session answering at once, {}",
                    run.label
                ),
                &format!(
                    "{} events/s (one figure per burst); chunk → client {} (p50 / p99); streams \
                     reopened {}; CPU per event, nodes summed {} µs, Postgres {} µs; cores busy {}",
                    rates.join(" / "),
                    p50_p99(&run.delays),
                    run.reconnects,
                    range(run.cpu.iter().filter_map(|c| c.per_event).map(|p| p.0), 1),
                    range(run.cpu.iter().filter_map(|c| c.per_event).map(|p| p.1), 1),
                    range(run.cpu.iter().map(|c| c.cores), 2),
                ),
            );
        }

        let correctness: Vec<&String> = self.failovers.iter().flat_map(|f| &f.problems).collect();
        let mut status = ExitCode::SUCCESS;
        if !audit.is_clean() || !correctness.is_empty() {
            println!(
                "\nCORRECTNESS FAILURE: events lost {}, duplicated {}, not stored {}, differing {}, \
                 out of order {}, inconsistent logs {}; {} problems:",
                audit.lost,
                audit.duplicated,
                audit.not_stored,
                audit.differing,
                audit.out_of_order,
                audit.inconsistent_logs,
                correctness.len()
            );
            for problem in correctness {
                println!("  - {problem}");
            }
            status = ExitCode::FAILURE;
        } else {
            println!(
                "\nno event lost, duplicated, made up or out of order; every failover happened"
            );
        }
        if !self.not_done.is_empty() {
            println!("\nNOT DONE ({}):", self.not_done.len());
            for problem in &self.not_done {
                println!("  - {problem}");
            }
            status = ExitCode::FAILURE;
        }
        status
    }
}

fn row(what: &str, figure: &str) {
    println!("| {what} | {figure} |");
}

/// `min – max` of `values`, with `decimals`.
fn range(values: impl Iterator<Item = f64>, decimals: usize) -> String {
    let values: Vec<f64> = values.collect();
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        "-".to_string()
    } else {
        format!("{min:.decimals$} – {max:.decimals$}")
    }
}

fn spread(values: &[u64]) -> Spread {
    Spread::of_micros(values)
}

/// `p50 / p99` in milliseconds.
fn p50_p99(spread: &Spread) -> String {
    format!(
        "{:.2} / {:.2} ms",
        spread.p50.as_secs_f64() * 1e3,
        spread.p99.as_secs_f64() * 1e3
    )
}

/// The commit the bench was built from (`+` when the tree had changes).
fn commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let Some(head) = git(&["rev-parse", "--short", "HEAD"]) else {
        return "unknown".to_string();
    };
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    if dirty { format!("{head}+") } else { head }
}

/// The server's version and the settings that decide what a commit costs.
pub async fn postgres_settings(database: &TestDatabase) -> String {
    let client = database.client().await;
    let query = "SELECT split_part(version(), ' ', 2), current_setting('fsync'), \
                 current_setting('synchronous_commit'), current_setting('full_page_writes'), \
                 current_setting('shared_buffers'), current_setting('max_connections')";
    match client.query_one(query, &[]).await {
        Ok(row) => format!(
            "PostgreSQL {} (fsync={}, synchronous_commit={}, full_page_writes={}, \
             shared_buffers={}, max_connections={})",
            row.get::<_, String>(0),
            row.get::<_, String>(1),
            row.get::<_, String>(2),
            row.get::<_, String>(3),
            row.get::<_, String>(4),
            row.get::<_, String>(5)
        ),
        Err(error) => format!("settings not read: {error}"),
    }
}
