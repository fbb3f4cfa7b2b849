//! The README's commands run as written. "Trying it without a model" is
//! read from README.md itself, so the text and the test cannot drift: every
//! ```sh block of that section is run by bash exactly as it is written —
//! twice, as a user pasting it twice would — with the built `agentbus` and
//! `scripted-model` first on the PATH (the section's `cargo install` block
//! puts the same binaries in ~/.cargo/bin), a home and a temporary folder
//! of its own, and the repository's root as the current directory. Its
//! stdout must be the ```text block that follows it.

use crate::support::GUARD;
use std::path::Path;
use std::process::Stdio;

/// A runnable block of the README and the output it shows.
#[derive(Debug)]
struct Example {
    script: String,
    stdout: String,
}

/// The fenced blocks of `section`, in order: (language, body).
fn fenced_blocks(section: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        let Some(language) = line.strip_prefix("```") else {
            continue;
        };
        let mut body = String::new();
        for line in lines.by_ref() {
            if line.starts_with("```") {
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        blocks.push((language.trim().to_string(), body));
    }
    blocks
}

/// The section under `## {heading}`, up to the next `## ` heading.
fn section<'a>(readme: &'a str, heading: &str) -> &'a str {
    let start = readme
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("README.md has no section `## {heading}`"));
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    &rest[..end]
}

/// The section's runnable blocks: each ```sh block but the one-time
/// installation (`cargo install` lines only), with the ```text block after
/// it. A ```sh block without its output is an error: it would go untested.
fn examples(section: &str) -> Result<Vec<Example>, String> {
    let blocks = fenced_blocks(section);
    let mut examples = Vec::new();
    for (index, (language, body)) in blocks.iter().enumerate() {
        if language != "sh" {
            continue;
        }
        let installs = body
            .lines()
            .filter(|line| !line.trim().is_empty())
            .all(|line| line.starts_with("cargo install "));
        if installs {
            continue;
        }
        let stdout = match blocks.get(index + 1) {
            Some((next, stdout)) if next == "text" => stdout.clone(),
            _ => {
                return Err(format!(
                    "this ```sh block is not followed by a ```text block of its output:\n{body}"
                ));
            }
        };
        examples.push(Example {
            script: body.clone(),
            stdout,
        });
    }
    Ok(examples)
}

/// Runs `script` with bash as a user's shell would: in the repository's
/// root, the built binaries first on the PATH, `home` as the home and
/// temporary folder. Returns (exit code, stdout, stderr).
async fn paste(script: &str, home: &Path) -> (Option<i32>, String, String) {
    let built = Path::new(env!("CARGO_BIN_EXE_agentbus"))
        .parent()
        .expect("the binary's folder");
    assert!(
        built.join("scripted-model").is_file(),
        "{} has no scripted-model: run the tests with `cargo test --workspace`, or \
         `cargo build -p agentbus-testkit --bins` first",
        built.display()
    );
    let path = std::env::join_paths(
        std::iter::once(built.to_path_buf()).chain(
            std::env::var_os("PATH")
                .map_or_else(Vec::new, |p| std::env::split_paths(&p).collect::<Vec<_>>()),
        ),
    )
    .expect("a PATH");
    let tmp = home.join("tmp");
    std::fs::create_dir_all(&tmp).expect("a temporary folder");
    let mut bash = as_a_new_user("bash", home);
    bash.arg("-c")
        .arg(script)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PATH", path)
        .env("TMPDIR", &tmp);
    let output = output_of(bash, script).await;
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `program` as a new user runs it: `home` as the home (and its XDG
/// folders), none of agentbus's variables, keys or log settings from the
/// test's environment, no stdin; killed if the test ends first.
fn as_a_new_user(program: &str, home: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"));
    for variable in [
        "AGENTBUS_CONFIG",
        "AGENTBUS_DATA_DIR",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "RUST_LOG",
    ] {
        command.env_remove(variable);
    }
    command.stdin(Stdio::null()).kill_on_drop(true);
    command
}

/// What `command` printed and its status; a hang past [`GUARD`] fails the
/// test naming `what`.
async fn output_of(mut command: tokio::process::Command, what: &str) -> std::process::Output {
    tokio::time::timeout(GUARD, command.output())
        .await
        .unwrap_or_else(|_| panic!("still running after {GUARD:?}:\n{what}"))
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"))
}

#[tokio::test]
async fn the_demo_without_a_model_works_pasted_as_written_twice() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("read README.md");
    let examples = examples(section(&readme, "Trying it without a model"))
        .unwrap_or_else(|e| panic!("README.md: {e}"));
    assert!(
        examples.len() >= 3,
        "the section's three wires, each a block with its output: {examples:#?}"
    );
    let home = tempfile::tempdir().expect("a home");
    for example in &examples {
        for attempt in ["first", "second"] {
            let (code, stdout, stderr) = paste(&example.script, home.path()).await;
            assert_eq!(
                (code, stdout.as_str()),
                (Some(0), example.stdout.as_str()),
                "the {attempt} paste of\n{}\nstderr:\n{stderr}",
                example.script
            );
            assert!(
                stderr.contains("scripted-model: listening on http://127.0.0.1:"),
                "{stderr}"
            );
            assert!(
                !stderr.contains("violation:") && !stderr.contains("problem:"),
                "the scripted model saw a request it would refuse:\n{stderr}"
            );
        }
    }
}

#[test]
fn a_block_without_its_output_is_refused() {
    let section = "## Trying\n\n```sh\ncargo install --path .\n```\n\n```sh\necho hi\n```\n\n```text\nhi\n```\n\n```sh\necho untested\n```\n";
    let refused = examples(section).expect_err("the last block has no output");
    assert!(refused.contains("echo untested"), "{refused}");
    let listed = examples(&section[..section.rfind("```sh").expect("a block")])
        .expect("every block has its output");
    assert_eq!(listed.len(), 1, "the install block is not run: {listed:#?}");
    assert_eq!(
        (listed[0].script.as_str(), listed[0].stdout.as_str()),
        ("echo hi\n", "hi\n")
    );
}

/// The "First run" section's sample is what agentbus says, line for line:
/// no keys, and nothing where the `local` profile expects its server. (The
/// profile is moved to a free port for the test, and the port and the
/// configuration file's path are put back as the README shows them.)
#[tokio::test]
async fn the_first_run_sample_is_what_agentbus_says() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("read README.md");
    let shown = fenced_blocks(section(&readme, "First run"))
        .into_iter()
        .next()
        .map(|(_, body)| body)
        .expect("the section's first block is the sample");
    let home = tempfile::tempdir().expect("a home");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let moved = home.path().join("moved.toml");
    std::fs::write(
        &moved,
        format!("[models.local]\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"),
    )
    .expect("write the configuration");
    let mut agentbus = as_a_new_user(env!("CARGO_BIN_EXE_agentbus"), home.path());
    agentbus
        .arg("--config")
        .arg(&moved)
        .arg("--workspace")
        .arg(home.path())
        .arg("--data-dir")
        .arg(home.path().join("data"))
        .args(["run", "hello"]);
    let output = output_of(agentbus, "agentbus run hello").await;
    assert_eq!(output.status.code(), Some(4));
    let config = home.path().join(".config/agentbus/config.toml");
    let said = String::from_utf8_lossy(&output.stderr)
        .replace(
            &config.display().to_string(),
            "/home/me/.config/agentbus/config.toml",
        )
        .replace(&format!("127.0.0.1:{port}"), "127.0.0.1:8080")
        .replace(&format!("--port {port}"), "--port 8080");
    assert_eq!(said, shown);
}

/// The configuration table's `[models.NAME]` row names every built-in
/// profile of `config/default.toml`.
#[test]
fn the_configuration_table_lists_every_built_in_profile() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("read README.md");
    let defaults: toml::Table = std::fs::read_to_string(root.join("config/default.toml"))
        .expect("read the defaults")
        .parse()
        .expect("the defaults are TOML");
    let built_in: Vec<String> = defaults
        .get("models")
        .and_then(toml::Value::as_table)
        .map(|models| models.keys().map(|name| format!("`{name}`")).collect())
        .unwrap_or_default();
    let row = readme
        .lines()
        .find(|line| line.starts_with("| `[models.NAME]` |"))
        .expect("the table's [models.NAME] row");
    let listed = row.split('|').nth(2).unwrap_or_default();
    let mut named: Vec<String> = listed
        .split(',')
        .map(|name| name.trim().to_string())
        .collect();
    named.sort();
    let mut built_in = built_in;
    built_in.sort();
    assert_eq!(named, built_in, "{row}");
}
