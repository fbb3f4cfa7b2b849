//! The MCP servers an editor gives with a session (`mcpServers` of
//! `session/new` and `session/load`) as our MCP server settings.
//!
//! stdio servers (command, arguments, environment) and streamable HTTP
//! servers (URL, headers) are taken; the legacy SSE transport and MCP over
//! ACP are not (the capabilities say so), and a client that sends them
//! anyway gets them skipped with the reason logged. A stdio server starts
//! in the session's working directory.
//!
//! Pure.

use agent_client_protocol::v1::schema::McpServer;
use agentbus_engine::settings::McpServerConfig;
use std::path::Path;

/// The settings of one of the editor's servers, by name; or why it is
/// skipped.
pub fn config(server: &McpServer, cwd: &Path) -> Result<(String, McpServerConfig), String> {
    match server {
        McpServer::Stdio(stdio) => {
            let mut config = McpServerConfig::stdio(stdio.command.display().to_string(), &[]);
            config.args = stdio.args.clone();
            config.env = stdio
                .env
                .iter()
                .map(|v| (v.name.clone(), v.value.clone()))
                .collect();
            config.cwd = Some(cwd.to_path_buf());
            Ok((stdio.name.clone(), config))
        }
        McpServer::Http(http) => {
            let mut config = McpServerConfig::http(http.url.clone());
            config.headers = http
                .headers
                .iter()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect();
            Ok((http.name.clone(), config))
        }
        McpServer::Sse(sse) => Err(format!(
            "MCP server `{}`: the SSE transport is not supported (agentbus speaks stdio and streamable HTTP)",
            sse.name
        )),
        _ => Err(
            "an MCP server of a transport agentbus does not speak (stdio and streamable HTTP only)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio,
    };
    use std::path::PathBuf;

    #[test]
    fn a_stdio_server_runs_its_command_in_the_sessions_directory() {
        let server = McpServer::Stdio(
            McpServerStdio::new("fs", "/usr/bin/mcp-fs")
                .args(vec!["--root".into(), ".".into()])
                .env(vec![EnvVariable::new("TOKEN", "t")]),
        );
        let (name, config) = config(&server, Path::new("/ws")).unwrap();
        assert_eq!(name, "fs");
        assert_eq!(config.command.as_deref(), Some("/usr/bin/mcp-fs"));
        assert_eq!(config.args, ["--root", "."]);
        assert_eq!(config.env["TOKEN"], "t");
        assert_eq!(config.cwd, Some(PathBuf::from("/ws")));
        assert!(config.enabled && config.url.is_none());
    }

    #[test]
    fn an_http_server_keeps_its_url_and_headers() {
        let server = McpServer::Http(
            McpServerHttp::new("gh", "https://mcp.example/mcp")
                .headers(vec![HttpHeader::new("Authorization", "Bearer x")]),
        );
        let (name, config) = config(&server, Path::new("/ws")).unwrap();
        assert_eq!(name, "gh");
        assert_eq!(config.url.as_deref(), Some("https://mcp.example/mcp"));
        assert_eq!(config.headers["Authorization"], "Bearer x");
        assert_eq!(config.command, None);
    }

    #[test]
    fn an_sse_server_is_skipped_saying_why() {
        let server = McpServer::Sse(McpServerSse::new("old", "http://x/sse"));
        let why = config(&server, Path::new("/ws")).unwrap_err();
        assert!(why.contains("`old`") && why.contains("SSE"), "{why}");
    }
}
