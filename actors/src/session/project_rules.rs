//! Saving an "allow always" rule to the workspace's `.agentbus.toml`
//! (`[permissions] allow`), so later sessions in the workspace allow the
//! same calls. The file keeps its comments and layout (`toml_edit`); a
//! file that is not valid TOML is left alone and the error says so.

use std::path::{Path, PathBuf};

/// Add `rule` to `[permissions] allow` in `workspace/.agentbus.toml`
/// (creating the file or the table), unless it is there already. Returns
/// the file's path.
pub fn save_allow_rule(workspace: &Path, rule: &str) -> Result<PathBuf, String> {
    let path = workspace.join(".agentbus.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| format!("{} is not valid TOML: {e}", path.display()))?;
    let permissions = doc
        .entry("permissions")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| format!("`permissions` in {} is not a table", path.display()))?;
    let allow = permissions
        .entry("allow")
        .or_insert(toml_edit::value(toml_edit::Array::new()))
        .as_array_mut()
        .ok_or_else(|| format!("`permissions.allow` in {} is not an array", path.display()))?;
    if !allow.iter().any(|v| v.as_str() == Some(rule)) {
        allow.push(rule);
    }
    std::fs::write(&path, doc.to_string())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_joins_the_allow_list_keeping_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".agentbus.toml");
        std::fs::write(
            &file,
            "# my settings\nmax_steps = 7\n\n[permissions]\ndeny = [\"bash(rm -rf /:*)\"]\n",
        )
        .unwrap();
        save_allow_rule(dir.path(), "bash(cargo test:*)").unwrap();
        save_allow_rule(dir.path(), "bash(cargo test:*)").unwrap();
        save_allow_rule(dir.path(), "edit_file(src/**)").unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("# my settings\nmax_steps = 7\n"), "{text}");
        let parsed: toml_edit::DocumentMut = text.parse().unwrap();
        let allow = parsed["permissions"]["allow"].as_array().unwrap();
        let allow: Vec<&str> = allow.iter().filter_map(|v| v.as_str()).collect();
        assert_eq!(allow, ["bash(cargo test:*)", "edit_file(src/**)"]);
        let deny = parsed["permissions"]["deny"].as_array().unwrap();
        assert_eq!(
            deny.get(0).and_then(|v| v.as_str()),
            Some("bash(rm -rf /:*)")
        );
    }

    #[test]
    fn a_missing_file_is_created_and_a_broken_one_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = save_allow_rule(dir.path(), "read_file(~/notes/**)").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("read_file(~/notes/**)"), "{text}");
        std::fs::write(&path, "this is = = not toml").unwrap();
        let error = save_allow_rule(dir.path(), "bash").unwrap_err();
        assert!(error.contains("not valid TOML"), "{error}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "this is = = not toml"
        );
    }
}
