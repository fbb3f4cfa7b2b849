//! `agentbus mcp list`: start the configured MCP servers, wait until each
//! is ready or has failed (bounded by its startup timeout), print what each
//! offers, and stop them again.

use agentbus_actors::model::ToolOrigin;
use agentbus_actors::protocol::McpServerStatus;
use agentbus_actors::{Runtime, Settings};
use anyhow::Context as _;
use serde_json::{Value, json};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

pub async fn list(settings: Settings, as_json: bool) -> anyhow::Result<ExitCode> {
    let configured = settings.mcp_servers.clone();
    let longest_start = configured
        .values()
        .map(|s| s.startup_timeout_secs)
        .max()
        .unwrap_or(0);
    let runtime = Runtime::start(settings).await?;
    let wait = Duration::from_secs(longest_start + 5);
    let catalog = match tokio::time::timeout(wait, runtime.settled_catalog()).await {
        Ok(catalog) => catalog,
        Err(_) => runtime.catalog().borrow().clone(),
    };
    let mut servers = Vec::new();
    for (name, config) in &configured {
        let tools: Vec<Value> = catalog
            .tools
            .iter()
            .filter(|t| {
                t.origin
                    == ToolOrigin::Mcp {
                        server: name.clone(),
                    }
            })
            .map(|t| json!({"name": t.name, "description": t.description, "summary": t.summary()}))
            .collect();
        let status = match catalog.servers.get(name) {
            Some(status) => serde_json::to_value(status)?,
            None if !config.enabled => json!({"state": "disabled"}),
            None => json!({"state": "unknown"}),
        };
        let transport = if config.url.is_some() {
            "http"
        } else {
            "stdio"
        };
        servers.push(json!({
            "name": name, "enabled": config.enabled, "transport": transport,
            "status": status, "tools": tools,
        }));
    }
    let mut out = std::io::stdout();
    if as_json {
        serde_json::to_writer_pretty(&mut out, &json!({"servers": servers}))?;
        writeln!(out)?;
    } else if servers.is_empty() {
        writeln!(
            out,
            "No MCP servers are configured (see [mcp_servers.NAME] in the README)."
        )?;
    } else {
        for (server, (name, _)) in servers.iter().zip(&configured) {
            let status = match catalog.servers.get(name) {
                Some(s) => s.describe(),
                None => server["status"]["state"]
                    .as_str()
                    .unwrap_or("unknown")
                    .to_string(),
            };
            writeln!(
                out,
                "{name} ({}): {status}",
                server["transport"].as_str().unwrap_or("?")
            )?;
            if let McpServerStatus::Failed { stderr, .. }
            | McpServerStatus::Restarting { stderr, .. } = catalog
                .servers
                .get(name)
                .unwrap_or(&McpServerStatus::Stopped)
            {
                for line in stderr.iter().rev().take(5).rev() {
                    writeln!(out, "    stderr: {line}")?;
                }
            }
            for tool in server["tools"].as_array().into_iter().flatten() {
                let summary = tool["summary"].as_str().unwrap_or_default();
                writeln!(out, "  {}  {summary}", tool["name"].as_str().unwrap_or("?"))?;
            }
        }
    }
    out.flush().context("writing to stdout")?;
    runtime.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
