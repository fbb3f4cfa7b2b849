//! The environment a command or an MCP server process starts with: the
//! process's own, filtered by the [`EnvironmentPolicy`], never with
//! agentbus's secrets (provider keys, the server token) in it.

use crate::settings::{EnvironmentPolicy, Inherit};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Names `inherit = "core"` keeps (and `LC_*`).
const CORE: [&str; 14] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "LANG", "LANGUAGE", "TERM", "TMPDIR",
    "TEMP", "TMP", "TZ", "PWD",
];

/// The child environment for `policy`, from the variables `vars` (the
/// process's own, usually).
pub fn child_environment(
    policy: &EnvironmentPolicy,
    vars: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let exclude = globs(&policy.exclude);
    let include_only = (!policy.include_only.is_empty()).then(|| globs(&policy.include_only));
    let mut kept: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(name, _)| match policy.inherit {
            Inherit::All => true,
            Inherit::Core => CORE.contains(&name.as_str()) || name.starts_with("LC_"),
            Inherit::None => false,
        })
        .filter(|(name, _)| !exclude.is_match(name))
        .filter(|(name, _)| include_only.as_ref().is_none_or(|only| only.is_match(name)))
        .filter(|(name, _)| !policy.secrets.iter().any(|secret| secret == name))
        .collect();
    for (name, value) in &policy.set {
        kept.retain(|(n, _)| n != name);
        kept.push((name.clone(), value.clone()));
    }
    kept
}

/// The child environment for `policy` from this process's environment
/// (variables that are not valid UTF-8 are left out).
pub fn from_process(policy: &EnvironmentPolicy) -> Vec<(String, String)> {
    child_environment(
        policy,
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
    )
}

/// Case-insensitive globs; a pattern that does not parse matches its own
/// text only (the configuration checks patterns before this runs).
fn globs(patterns: &[String]) -> GlobSet {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = GlobBuilder::new(pattern)
            .case_insensitive(true)
            .build()
            .or_else(|_| GlobBuilder::new(&globset::escape(pattern)).build());
        if let Ok(glob) = glob {
            set.add(glob);
        }
    }
    set.build().unwrap_or_else(|_| GlobSet::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vec<(String, String)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("OPENAI_API_KEY", "sk-1"),
            ("MY_PROVIDER_CRED", "c"),
            ("GITHUB_TOKEN", "ghp"),
            ("aws_secret", "s"),
            ("LC_ALL", "C"),
            ("EDITOR", "vi"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec()
    }

    fn names(env: &[(String, String)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn keys_tokens_and_secrets_never_reach_a_command() {
        let policy = EnvironmentPolicy {
            secrets: vec!["MY_PROVIDER_CRED".into()],
            ..Default::default()
        };
        let env = child_environment(&policy, vars());
        assert_eq!(names(&env), ["PATH", "HOME", "LC_ALL", "EDITOR"]);
    }

    #[test]
    fn core_keeps_the_basics_and_set_adds() {
        let mut policy = EnvironmentPolicy {
            inherit: Inherit::Core,
            ..Default::default()
        };
        policy.set.insert("CI".into(), "1".into());
        let env = child_environment(&policy, vars());
        assert_eq!(names(&env), ["PATH", "HOME", "LC_ALL", "CI"]);
    }

    #[test]
    fn include_only_narrows_and_secrets_still_go() {
        let policy = EnvironmentPolicy {
            include_only: vec!["PATH".into(), "*_KEY".into()],
            exclude: Vec::new(),
            secrets: vec!["OPENAI_API_KEY".into()],
            ..Default::default()
        };
        let env = child_environment(&policy, vars());
        assert_eq!(names(&env), ["PATH"]);
    }
}
