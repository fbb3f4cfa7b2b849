//! Where the running `agentbus serve` daemons of a data dir listen, so a
//! front end that finds a session held by one can point at it
//! (`--attach URL`).
//!
//! A session's lease in the store names the process that drives it (its
//! `Owner`: pid and start time) and nothing more. Each daemon therefore
//! leaves a file `DATA_DIR/daemons/PID.json` — `{"owner": "PID:START",
//! "url": "http://..."}` — while it runs, removed when it stops. A reader
//! trusts a file only when its owner is exactly the lease's holder, so a
//! file a killed daemon left behind (or one of a reused pid) says nothing.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a daemon's file says.
#[derive(Debug, Serialize, Deserialize)]
struct DaemonFile {
    /// The daemon's lease owner, `PID:START`.
    owner: String,
    /// Where its API listens.
    url: String,
}

/// A daemon's file, removed when this is dropped (the daemon stops).
pub struct Announced {
    path: PathBuf,
}

impl Drop for Announced {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn folder(data_dir: &Path) -> PathBuf {
    data_dir.join("daemons")
}

fn pid_of(owner: &str) -> Option<&str> {
    owner
        .split_once(':')
        .map(|(pid, _)| pid)
        .filter(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Say that the daemon `owner` (`PID:START`) listens at `url`.
pub fn announce(data_dir: &Path, owner: &str, url: &str) -> std::io::Result<Announced> {
    let pid = pid_of(owner).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not an owner: {owner}"),
        )
    })?;
    let dir = folder(data_dir);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{pid}.json"));
    let file = DaemonFile {
        owner: owner.to_string(),
        url: url.to_string(),
    };
    let text = serde_json::to_string(&file).map_err(std::io::Error::other)?;
    // Written whole under another name, then moved into place: a reader
    // never sees half a file.
    let partial = dir.join(format!("{pid}.json.partial"));
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, &path)?;
    Ok(Announced { path })
}

/// The URL of the daemon `owner` (`PID:START`, a lease's holder), if it is
/// a daemon of this data dir.
pub fn url_of(data_dir: &Path, owner: &str) -> Option<String> {
    let pid = pid_of(owner)?;
    let text = std::fs::read_to_string(folder(data_dir).join(format!("{pid}.json"))).ok()?;
    let file: DaemonFile = serde_json::from_str(&text).ok()?;
    (file.owner == owner).then_some(file.url)
}

/// What process `pid` is, from its command line (`agentbus chat`), for a
/// message naming it; `None` when that cannot be read.
pub fn command_of(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut words = raw
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned());
    let program = words.next()?;
    let program = Path::new(&program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or(program);
    // The subcommand is the first word that is not a flag or its value.
    let rest: Vec<String> = words.collect();
    let mut sub = None;
    let mut skip = false;
    for word in &rest {
        if skip {
            skip = false;
        } else if word.starts_with("--") {
            skip = !word.contains('=');
        } else if !word.starts_with('-') {
            sub = Some(word.clone());
            break;
        }
    }
    Some(match sub {
        Some(sub) => format!("{program} {sub}"),
        None => program,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_is_found_by_its_exact_owner_and_forgotten_when_it_stops() {
        let dir = tempfile::tempdir().unwrap();
        let announced = announce(dir.path(), "4242:777", "http://127.0.0.1:7878").unwrap();
        assert_eq!(
            url_of(dir.path(), "4242:777").as_deref(),
            Some("http://127.0.0.1:7878")
        );
        assert_eq!(url_of(dir.path(), "4242:778"), None, "a reused pid");
        assert_eq!(url_of(dir.path(), "4243:777"), None);
        drop(announced);
        assert_eq!(url_of(dir.path(), "4242:777"), None);
    }

    #[test]
    fn an_owner_must_be_pid_and_start() {
        let dir = tempfile::tempdir().unwrap();
        assert!(announce(dir.path(), "../x:1", "http://h").is_err());
        assert_eq!(url_of(dir.path(), "nonsense"), None);
    }

    #[test]
    fn this_process_has_a_command() {
        assert!(command_of(std::process::id()).is_some());
    }
}
