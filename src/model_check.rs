//! The model profile a session will use, checked as agentbus starts
//! (`chat`, `run`, `acp`, `serve`), before the first message: a key the
//! profile needs that the environment lacks, or a server on this machine
//! (`base_url` on localhost) that does not answer. The problem is said at
//! once with the three ways out, written for an installed binary: set the
//! key variable, start a local OpenAI-compatible server, or pick or
//! configure another profile.
//!
//! Nothing is sent to the model: a local server is only connected to (TCP)
//! and the connection closed.

use agentbus_engine::Settings;
use agentbus_engine::settings::ModelProfile;
use std::path::Path;
use std::time::Duration;

/// How long a local server may take to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The small model llama.cpp's server fetches and serves in the advice.
const LLAMA_SERVER_MODEL: &str = "ggml-org/gemma-3-1b-it-GGUF";

/// Why a profile cannot answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The profile needs a key in `variable`, which is not set.
    MissingKey { profile: String, variable: String },
    /// Nothing answers at the profile's `base_url` on this machine.
    NoServer {
        profile: String,
        base_url: String,
        detail: String,
    },
}

/// Check profile `name` of `settings`: its key, and when it is on this
/// machine, whether its server accepts a connection.
pub async fn check(settings: &Settings, name: &str) -> Option<Problem> {
    let profile = settings.models.get(name)?;
    if let Some(variable) = profile.missing_key() {
        return Some(Problem::MissingKey {
            profile: name.to_string(),
            variable,
        });
    }
    if !profile.is_local() {
        return None;
    }
    let (host, port) = host_and_port(&profile.base_url)?;
    let detail = match tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio::net::TcpStream::connect((host.as_str(), port)),
    )
    .await
    {
        Ok(Ok(_)) => return None,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused".to_string()
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()),
    };
    Some(Problem::NoServer {
        profile: name.to_string(),
        base_url: profile.base_url.clone(),
        detail,
    })
}

/// The host and port of a URL (`http://127.0.0.1:8080/v1` → 127.0.0.1,
/// 8080; the scheme's port when none is written).
fn host_and_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let default_port = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None => default_port,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_string(), port.parse().ok()?)),
        None => Some((authority.to_string(), default_port)),
    }
}

impl Problem {
    /// The profile it is about.
    pub fn profile(&self) -> &str {
        match self {
            Problem::MissingKey { profile, .. } | Problem::NoServer { profile, .. } => profile,
        }
    }

    /// What is wrong and the three ways out, as lines for stderr (the
    /// first one says what is wrong). `config_file` is where the user's
    /// own profiles go (`config::user_config_file`).
    pub fn advice(&self, settings: &Settings, config_file: Option<&Path>) -> String {
        let others: Vec<&str> = settings
            .models
            .keys()
            .map(String::as_str)
            .filter(|name| *name != self.profile())
            .collect();
        let config = config_file
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "~/.config/agentbus/config.toml".to_string());
        let pick = format!(
            "pick another profile with --model NAME (configured: {}), or add your own as [models.NAME] \
             in {config} (`model = \"NAME\"` there makes it the default; the README's \"Models\" section has examples)",
            others.join(", ")
        );
        match self {
            Problem::MissingKey { profile, variable } => {
                let local = match local_profile(settings) {
                    Some((name, local)) => {
                        let (whose, command) = start_command(local);
                        format!(
                            "run a model on this machine: start an OpenAI-compatible server where profile `{name}` expects it ({}), e.g. {whose}:\n       \
                             {command}\n     \
                             then use --model {name}",
                            local.base_url
                        )
                    }
                    None => {
                        let (whose, command) = llama_server(8080);
                        format!(
                            "run a model on this machine: start an OpenAI-compatible server, e.g. {whose}:\n       \
                             {command}\n     \
                             and add a profile for it (provider = \"openai\", base_url = \"http://127.0.0.1:8080/v1\")"
                        )
                    }
                };
                format!(
                    "model profile `{profile}` needs an API key in the environment variable {variable}, which is not set.\n\
                     Fix it one of three ways:\n  \
                     1. set the key, then start agentbus again:\n       \
                     export {variable}=...\n  \
                     2. {local}\n  \
                     3. {pick}"
                )
            }
            Problem::NoServer {
                profile,
                base_url,
                detail,
            } => {
                let (whose, command) = settings
                    .models
                    .get(profile)
                    .map(start_command)
                    .unwrap_or_else(|| llama_server(8080));
                let keys: Vec<String> = settings
                    .models
                    .iter()
                    .filter(|(_, p)| !p.is_local())
                    .filter_map(|(name, p)| {
                        Some(format!("{} (profile `{name}`)", p.key_variable()?))
                    })
                    .collect();
                let keys = if keys.is_empty() {
                    "an API key for a hosted model (a profile with api_key_env)".to_string()
                } else {
                    keys.join(" or ")
                };
                format!(
                    "model profile `{profile}` expects a server at {base_url}, and nothing answers there ({detail}).\n\
                     Fix it one of three ways:\n  \
                     1. start an OpenAI-compatible server there, e.g. {whose}:\n       \
                     {command}\n  \
                     2. use a hosted model: set {keys}, then pick its profile with --model NAME\n  \
                     3. {pick}"
                )
            }
        }
    }
}

/// One line for a turn that could not reach profile `name` on this
/// machine (the connection error's hint): the same three ways, short.
pub fn connect_hint(settings: &Settings, name: &str) -> Option<String> {
    let profile = settings.models.get(name)?;
    if !profile.is_local() || profile.missing_key().is_some() {
        return None;
    }
    let (whose, command) = start_command(profile);
    Some(format!(
        "is a server running there? Start one (e.g. {whose}: `{command}`), set an API key and switch to its profile, or pick another profile (/models, /model NAME)"
    ))
}

/// The profile a user would start a local server for: `local` when it is
/// configured and on this machine, else the first keyless one that is.
fn local_profile(settings: &Settings) -> Option<(&str, &ModelProfile)> {
    let usable = |p: &ModelProfile| p.is_local() && p.key_variable().is_none();
    if let Some(local) = settings.models.get("local").filter(|p| usable(p)) {
        return Some(("local", local));
    }
    settings
        .models
        .iter()
        .find(|(_, p)| usable(p))
        .map(|(name, p)| (name.as_str(), p))
}

/// How to start a server where `profile` expects one — whose server, and
/// the command: Ollama on its port, llama.cpp's server otherwise.
fn start_command(profile: &ModelProfile) -> (&'static str, String) {
    let port = host_and_port(&profile.base_url)
        .map(|(_, port)| port)
        .unwrap_or(8080);
    if port == 11434 {
        (
            "Ollama's",
            format!("ollama serve  (and once: ollama pull {})", profile.model),
        )
    } else {
        llama_server(port)
    }
}

fn llama_server(port: u16) -> (&'static str, String) {
    (
        "llama.cpp's",
        format!("llama-server -hf {LLAMA_SERVER_MODEL} --port {port}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::settings::ProviderKind;
    use std::collections::BTreeMap;

    fn settings(models: &[(&str, ModelProfile)]) -> Settings {
        let mut settings = crate::config::built_in();
        settings.models = models
            .iter()
            .map(|(n, p)| (n.to_string(), p.clone()))
            .collect::<BTreeMap<_, _>>();
        settings
    }

    fn profile(url: &str, env: Option<&str>) -> ModelProfile {
        let mut p = ModelProfile::new(ProviderKind::Openai, "m", url);
        p.api_key_env = env.map(String::from);
        p
    }

    #[test]
    fn urls_give_host_and_port() {
        assert_eq!(
            host_and_port("http://127.0.0.1:8080/v1"),
            Some(("127.0.0.1".into(), 8080))
        );
        assert_eq!(
            host_and_port("http://localhost/v1"),
            Some(("localhost".into(), 80))
        );
        assert_eq!(
            host_and_port("http://[::1]:11434/v1"),
            Some(("::1".into(), 11434))
        );
        assert_eq!(host_and_port("nonsense"), None);
    }

    #[tokio::test]
    async fn a_missing_key_names_the_variable_and_three_ways_out() {
        let s = settings(&[
            (
                "cloud",
                profile(
                    "https://api.example.com/v1",
                    Some("AGENTBUS_SURELY_UNSET_KEY"),
                ),
            ),
            ("local", profile("http://127.0.0.1:8080/v1", None)),
        ]);
        let problem = check(&s, "cloud").await.expect("a problem");
        assert_eq!(
            problem,
            Problem::MissingKey {
                profile: "cloud".into(),
                variable: "AGENTBUS_SURELY_UNSET_KEY".into()
            }
        );
        let advice = problem.advice(&s, Some(Path::new("/home/u/.config/agentbus/config.toml")));
        for needle in [
            "AGENTBUS_SURELY_UNSET_KEY",
            "\n       export AGENTBUS_SURELY_UNSET_KEY=...\n",
            "\n       llama-server -hf ggml-org/gemma-3-1b-it-GGUF --port 8080\n",
            "http://127.0.0.1:8080/v1",
            "--model local",
            "--model NAME",
            "[models.NAME] in /home/u/.config/agentbus/config.toml",
        ] {
            assert!(advice.contains(needle), "{needle}: {advice}");
        }
        assert!(!advice.contains("scripts/"), "{advice}");
    }

    #[tokio::test]
    async fn a_dead_local_server_is_found_and_a_live_one_passes() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let live = format!("http://{}/v1", listener.local_addr().unwrap());
        let dead_port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let dead = format!("http://127.0.0.1:{dead_port}/v1");
        let s = settings(&[
            ("live", profile(&live, None)),
            ("dead", profile(&dead, None)),
            (
                "cloud",
                profile("https://api.example.com/v1", Some("CLOUD_KEY")),
            ),
        ]);
        assert_eq!(check(&s, "live").await, None);
        let problem = check(&s, "dead").await.expect("a problem");
        let advice = problem.advice(&s, None);
        for needle in [
            dead.as_str(),
            "connection refused",
            &format!("--port {dead_port}"),
            "CLOUD_KEY (profile `cloud`)",
            "--model NAME",
        ] {
            assert!(advice.contains(needle), "{needle}: {advice}");
        }
        assert!(connect_hint(&s, "dead").is_some());
        assert_eq!(connect_hint(&s, "cloud"), None);
    }
}
