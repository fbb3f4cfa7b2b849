//! `agentbus mcp list`: start the configured MCP servers, wait until each
//! is ready or has failed (bounded by its startup timeout), print what each
//! offers, and stop them again.

use agentbus_engine::protocol::McpServerStatus;
use agentbus_engine::runtime::ToolOrigin;
use agentbus_engine::{Runtime, Settings};
use anyhow::Context as _;
use serde::Serialize;
use serde_json::{Value, json};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// One configured server as `mcp list` reports it.
#[derive(Serialize)]
struct ServerReport {
    name: String,
    enabled: bool,
    /// `stdio` or `http`.
    transport: &'static str,
    /// The server's status as the catalog has it, or `{"state":
    /// "disabled"}` / `{"state": "unknown"}`.
    status: Value,
    tools: Vec<ToolReport>,
    /// The status itself (for the text output).
    #[serde(skip)]
    known: Option<McpServerStatus>,
}

#[derive(Serialize)]
struct ToolReport {
    name: String,
    description: String,
    summary: String,
}

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
        let tools = catalog
            .shared
            .tools
            .iter()
            .filter(|t| matches!(&t.origin, ToolOrigin::Mcp { server, .. } if server == name))
            .map(|t| ToolReport {
                name: t.name.clone(),
                description: t.description.clone(),
                summary: t.summary().to_string(),
            })
            .collect();
        let known = catalog.shared.servers.get(name).cloned();
        let status = match &known {
            Some(status) => serde_json::to_value(status)?,
            None if !config.enabled => json!({"state": "disabled"}),
            None => json!({"state": "unknown"}),
        };
        servers.push(ServerReport {
            name: name.clone(),
            enabled: config.enabled,
            transport: if config.url.is_some() {
                "http"
            } else {
                "stdio"
            },
            status,
            tools,
            known,
        });
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
        for server in &servers {
            write_text(&mut out, server)?;
        }
    }
    out.flush().context("writing to stdout")?;
    runtime.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// A server, its status (with the last lines of its stderr when it failed),
/// and a line per tool.
fn write_text(out: &mut impl Write, server: &ServerReport) -> std::io::Result<()> {
    let status = match &server.known {
        Some(status) => status.describe(),
        None => server.status["state"]
            .as_str()
            .unwrap_or("unknown")
            .to_string(),
    };
    writeln!(out, "{} ({}): {status}", server.name, server.transport)?;
    if let Some(
        McpServerStatus::Failed { stderr, .. } | McpServerStatus::Restarting { stderr, .. },
    ) = &server.known
    {
        for line in stderr.iter().rev().take(5).rev() {
            writeln!(out, "    stderr: {line}")?;
        }
    }
    for tool in &server.tools {
        writeln!(out, "  {}  {}", tool.name, tool.summary)?;
    }
    Ok(())
}
