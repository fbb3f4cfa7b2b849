//! `agentbus hooks list|trust`: the hooks a session in the workspace runs,
//! and trusting the workspace's own.
//!
//! A repository's `.claude/settings.json` can hold hooks: commands that
//! would run on this machine as soon as a session starts there. They run
//! only once the user has looked at them and trusted that exact set; this
//! is where that is done outside the chat. Prints to stdout; never runs a
//! hook.

use crate::cli::HooksCommand;
use agentbus_engine::Settings;
use agentbus_engine::protocol::hook::HookGroup;
use agentbus_engine::runtime::hooks;
use std::process::ExitCode;

pub fn run(settings: &Settings, command: HooksCommand) -> anyhow::Result<ExitCode> {
    let workspace = &settings.workspace;
    let home = dirs::home_dir();
    let (project, problems) = hooks::read_project(workspace, home.as_deref());
    let trust_file = hooks::trust_file(&settings.data_dir);
    match command {
        HooksCommand::List => {
            print_groups("configuration ([hooks])", &settings.hooks);
            if let Some(home) = &home {
                let user = home.join(".claude").join("settings.json");
                let (groups, _) = read_user(&user);
                print_groups("~/.claude/settings.json", &groups);
            }
            let trusted = hooks::is_trusted(&trust_file, workspace, &project);
            let state = if project.is_empty() {
                "none".to_string()
            } else if trusted {
                "trusted: they run".to_string()
            } else {
                "NOT trusted: they do not run (`agentbus hooks trust`)".to_string()
            };
            println!("workspace {} — {state}", workspace.display());
            for group in &project {
                print_group(group);
            }
            for problem in problems {
                println!("  not used: {problem}");
            }
            Ok(ExitCode::SUCCESS)
        }
        HooksCommand::Trust => {
            if project.is_empty() {
                println!(
                    "No hooks in {}/.claude/settings.json or settings.local.json: nothing to trust.",
                    workspace.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            println!("Trusting these hooks of {}:", workspace.display());
            for group in &project {
                print_group(group);
            }
            hooks::trust(&trust_file, workspace, &project)?;
            println!(
                "Trusted. New sessions here run them; a change to them must be trusted again."
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn read_user(path: &std::path::Path) -> (Vec<HookGroup>, Vec<String>) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Default::default();
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Default::default();
    };
    match value.get("hooks") {
        Some(block) => hooks::parse(block, "~/.claude/settings.json"),
        None => Default::default(),
    }
}

fn print_groups(title: &str, groups: &[HookGroup]) {
    if groups.is_empty() {
        return;
    }
    println!("{title}");
    for group in groups {
        print_group(group);
    }
}

fn print_group(group: &HookGroup) {
    for line in group.lines() {
        println!("  {line}");
    }
}
