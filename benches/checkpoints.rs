//! What checkpoints cost, measured (not a test: it asserts only that the
//! work was done). Run with `cargo bench --bench checkpoints`; the README
//! reports the figures.
//!
//! A workspace of 10,000 text files (`AGENTBUS_BENCH_FILES`) in 100
//! folders, about 2 KiB each, plus a `.gitignore`d `target/` of 5,000 more
//! that are never looked at. The release binary, the scripted model, one
//! `agentbus run` process per turn (each a restart), SQLite store:
//!
//! 1. A turn whose model runs `bash` (`true`: nothing changes), with
//!    checkpoints off, then on: the first look keeps every file's bytes
//!    (cold), the next ones only compare metadata (warm). Each turn's wall
//!    time, median of 5, and the store's size before and after the cold one.
//!    Then one turn of 11 such calls: what each further call costs inside
//!    a session (the chat, `serve`), against the one-call turn.
//! 2. A `sed -i` over 1,000 of the files (one turn), then `/rewind SEQ
//!    code` of that turn: its wall time against a `/usage` (the process
//!    alone), and that the files are back.

#[path = "../tests/all/support/mod.rs"]
#[allow(dead_code)] // the bench uses a part of the tests' support
mod support;

use agentbus_testkit::Script;
use serde_json::Value;
use std::path::Path;
use std::time::Instant;
use support::Fixture;

const FOLDERS: usize = 100;
const ROUNDS: usize = 5;
/// Bash calls in the turn that measures a call's cost inside a session.
const SERIAL: usize = 11;

fn files() -> usize {
    std::env::var("AGENTBUS_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

fn lay_out(root: &Path, count: usize) {
    let line = "let value = compute(input) + offset; // a line of source text\n";
    for i in 0..count {
        let dir = root.join(format!("src{:03}", i % FOLDERS));
        std::fs::create_dir_all(&dir).expect("folder");
        let mut text = format!("// file {i}\n");
        for _ in 0..32 {
            text.push_str(line);
        }
        std::fs::write(dir.join(format!("f{i:05}.rs")), text).expect("file");
    }
    std::fs::write(root.join(".gitignore"), "target/\n").expect(".gitignore");
    let target = root.join("target");
    std::fs::create_dir_all(&target).expect("target");
    for i in 0..5_000 {
        std::fs::write(target.join(format!("o{i}.o")), "object").expect("object");
    }
}

fn script(rounds: usize) -> Script {
    let mut toml = String::new();
    for _ in 0..(2 * rounds + 1) {
        toml.push_str(
            "[[response]]\ntool_calls = [ { id = \"t\", name = \"bash\", arguments = { command = \"true\" } } ]\n[[response]]\ntext = \"ok\"\n",
        );
    }
    // One turn of SERIAL bash calls: what each costs inside one session.
    for i in 0..SERIAL {
        toml.push_str(&format!(
            "[[response]]\ntool_calls = [ {{ id = \"m{i}\", name = \"bash\", arguments = {{ command = \"true\" }} }} ]\n"
        ));
    }
    toml.push_str("[[response]]\ntext = \"many\"\n");
    toml.push_str(
        "[[response]]\ntool_calls = [ { id = \"s\", name = \"bash\", arguments = { command = \"sed -i 's/offset/OFFSET/' src00[0-9]/*.rs\" } } ]\n[[response]]\ntext = \"edited\"\n",
    );
    Script::from_toml_str(&toml).expect("script")
}

async fn timed(fx: &Fixture, args: &[&str]) -> (f64, Vec<Value>) {
    let started = Instant::now();
    let out = fx.run(args).await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(out.code(), Some(0), "{args:?}: {}", out.stderr);
    (ms, out.events())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn store_bytes(fx: &Fixture) -> u64 {
    let dir = fx.home.path().join("data");
    ["agentbus.db", "agentbus.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(bench());
}

async fn bench() {
    let count = files();
    let fx = Fixture::with_script(script(ROUNDS)).await;
    lay_out(fx.workspace(), count);
    let bytes: u64 = (0..count)
        .map(|i| {
            std::fs::metadata(
                fx.workspace()
                    .join(format!("src{:03}/f{i:05}.rs", i % FOLDERS)),
            )
            .map(|m| m.len())
            .unwrap_or(0)
        })
        .sum();
    println!(
        "checkpoints: a workspace of {count} files ({:.1} MiB) and 5,000 ignored ones",
        bytes as f64 / 1048576.0
    );

    // Checkpoints off: the turn alone.
    fx.add_config("[checkpoints]\nenabled = false\n");
    let mut off = Vec::new();
    for _ in 0..ROUNDS {
        off.push(timed(&fx, &["run", "--json", "run true"]).await.0);
    }
    // On: the first look keeps every file.
    let config = std::fs::read_to_string(&fx.config).expect("config");
    std::fs::write(
        &fx.config,
        config.replace("[checkpoints]\nenabled = false\n", ""),
    )
    .expect("config");
    let before = store_bytes(&fx);
    let (cold, events) = timed(&fx, &["run", "--json", "run true"]).await;
    let id = support::session_id(&events);
    let after = store_bytes(&fx);
    let mut warm = Vec::new();
    for _ in 0..ROUNDS {
        warm.push(
            timed(&fx, &["run", "--json", "--session", &id, "run true"])
                .await
                .0,
        );
    }
    let off = median(off);
    let warm = median(warm);
    println!("  a bash turn, checkpoints off: {off:.0} ms (median of {ROUNDS})");
    println!(
        "  the first checkpointed bash turn (every file kept): {cold:.0} ms, +{:.0} ms; the store grew by {:.1} MiB",
        cold - off,
        after.saturating_sub(before) as f64 / 1048576.0
    );
    println!(
        "  later bash turns, each a new process (metadata compared with the cache file, nothing kept): {warm:.0} ms, +{:.0} ms (median of {ROUNDS})",
        warm - off
    );

    // Inside one session: SERIAL calls in one turn against one.
    let (serial, _) = timed(&fx, &["run", "--json", "--session", &id, "many calls"]).await;
    println!(
        "  inside one session, each further checkpointed bash call: +{:.0} ms ({SERIAL} calls in one turn: {serial:.0} ms)",
        (serial - warm) / (SERIAL - 1) as f64
    );

    // A sed -i over 1,000 files, then its rewind.
    let (_, events) = timed(&fx, &["run", "--json", "--session", &id, "edit many"]).await;
    let changed = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .map(|e| e["checkpoint"]["files"].as_array().map_or(0, |f| f.len()))
        .unwrap_or(0);
    let seq = events
        .iter()
        .find(|e| e["type"] == "user")
        .and_then(|e| e["seq"].as_u64())
        .expect("the turn's seq");
    let (usage, _) = timed(&fx, &["run", "--json", "--session", &id, "/usage"]).await;
    let rewind = format!("/rewind {seq} code");
    let (rewound, events) = timed(&fx, &["run", "--json", "--session", &id, &rewind]).await;
    let restored = events
        .iter()
        .find(|e| e["subtype"] == "rewound")
        .and_then(|e| e["data"]["files"].as_array().map(|f| f.len()))
        .unwrap_or(0);
    let sample = std::fs::read_to_string(fx.workspace().join("src000/f00000.rs")).expect("file");
    assert!(!sample.contains("OFFSET"), "rewound");
    println!(
        "  sed -i over {changed} files, then /rewind code: {rewound:.0} ms ({restored} files restored), +{:.0} ms over a /usage in the same session",
        rewound - usage
    );
}
