//! Leases: which agentbus process is driving a stored session.
//!
//! Exists so that two processes never drive the same session at once (two
//! AgentLoops appending to one log would interleave their seqs), while a
//! process that crashed does not lock its sessions forever. A lease names an
//! [`Owner`]: a pid *and* that process's start time (field 22 of
//! `/proc/PID/stat`, in clock ticks since boot), so a pid the kernel has
//! since reused for an unrelated process is not mistaken for the holder.
//!
//! Linux only: elsewhere `/proc` is missing, the start time reads as 0 and
//! every other process's lease looks stale. Never signals, waits for or
//! otherwise touches the processes it inspects; it only reads `/proc`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

/// A process that may hold a session's lease. Stored in the `owner` column
/// as `"pid:start_time"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    /// The process's start time, in clock ticks after boot (0 if unknown).
    pub start_time: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        static CURRENT: OnceLock<Owner> = OnceLock::new();
        *CURRENT.get_or_init(|| {
            let pid = std::process::id();
            let start_time = read_stat("self").map(|s| s.start_time).unwrap_or(0);
            Owner { pid, start_time }
        })
    }

    /// The running process `pid`, or `None` if there is none (or it is a
    /// zombie).
    pub fn of_pid(pid: u32) -> Option<Owner> {
        let stat = read_stat(&pid.to_string())?;
        (!stat.is_dead()).then_some(Owner {
            pid,
            start_time: stat.start_time,
        })
    }

    /// Whether this process still runs: the pid exists, is not a zombie, and
    /// started at `start_time` (so it is the same process, not a reuse of
    /// its pid).
    pub fn is_alive(&self) -> bool {
        if *self == Owner::current() {
            return true;
        }
        Owner::of_pid(self.pid).is_some_and(|now| now.start_time == self.start_time)
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.pid, self.start_time)
    }
}

/// The `owner` column did not read `"pid:start_time"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("lease {0:?} is not \"pid:start_time\"")]
pub struct ParseOwnerError(pub String);

impl FromStr for Owner {
    type Err = ParseOwnerError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ParseOwnerError(s.to_string());
        let (pid, start_time) = s.split_once(':').ok_or_else(bad)?;
        Ok(Owner {
            pid: pid.parse().map_err(|_| bad())?,
            start_time: start_time.parse().map_err(|_| bad())?,
        })
    }
}

/// The two fields of `/proc/PID/stat` a lease needs.
struct Stat {
    /// Field 3: R, S, D, Z (zombie), X (dead), ...
    state: char,
    /// Field 22.
    start_time: u64,
}

impl Stat {
    fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

fn read_stat(pid: &str) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parse `/proc/PID/stat`. Field 2 (the command name, in parentheses) may
/// hold spaces and parentheses itself, so fields are counted from the last
/// `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let after_comm = &text[text.rfind(')')? + 1..];
    let mut fields = after_comm.split_whitespace();
    // Field 3 is the first after the command name; field 22 is 19 later.
    let state = fields.next()?.chars().next()?;
    let start_time = fields.nth(18)?.parse().ok()?;
    Some(Stat { state, start_time })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let text = "1234 (we ird) (name)) S 1 1234 1234 0 -1 4194560 100 0 0 0 \
                    5 3 0 0 20 0 1 0 987654 10000 100 18446744073709551615";
        let stat = parse_stat(text).expect("parses");
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.start_time, 987654);
        assert!(!stat.is_dead());
        let zombie = text.replace(") S ", ") Z ");
        assert!(parse_stat(&zombie).expect("parses").is_dead());
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn owner_round_trips_through_its_column_text() {
        let owner = Owner {
            pid: 42,
            start_time: 123_456,
        };
        assert_eq!(owner.to_string(), "42:123456");
        assert_eq!("42:123456".parse::<Owner>(), Ok(owner));
        assert!("42".parse::<Owner>().is_err());
        assert!("x:1".parse::<Owner>().is_err());
        assert!("1:-5".parse::<Owner>().is_err());
    }

    #[test]
    fn this_process_is_alive_with_its_real_start_time() {
        let me = Owner::current();
        assert_eq!(me.pid, std::process::id());
        assert_ne!(me.start_time, 0, "/proc/self/stat is readable on Linux");
        assert!(me.is_alive());
        assert_eq!(Owner::of_pid(me.pid), Some(me));
    }

    #[test]
    fn a_reused_pid_with_another_start_time_is_not_alive() {
        let me = Owner::current();
        let impostor = Owner {
            pid: me.pid,
            start_time: me.start_time + 1,
        };
        assert!(!impostor.is_alive());
    }

    #[test]
    fn a_pid_that_does_not_exist_is_not_alive() {
        // Far above any pid_max Linux allows (2^22).
        let ghost = Owner {
            pid: 2_000_000_000,
            start_time: 1,
        };
        assert!(!ghost.is_alive());
        assert_eq!(Owner::of_pid(ghost.pid), None);
    }
}
