//! `initialize`: which protocol version we speak and what we can do, and
//! what we keep of what the client can do.
//!
//! We speak ACP v1 and offer: loading stored sessions, listing them,
//! embedded context in prompts (a file's or a selection's text), and MCP
//! servers over stdio and streamable HTTP given with a session. No images
//! or audio (the model interface carries text), no SSE MCP servers, no
//! authentication (keys come from agentbus's own configuration).
//!
//! Pure.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, Implementation, InitializeRequest, InitializeResponse, McpCapabilities,
    PromptCapabilities, SessionCapabilities, SessionListCapabilities,
};

/// What the client offers that changes what sessions do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientOffers {
    /// `fs/read_text_file` and `fs/write_text_file` both: the file tools
    /// of sessions in this process go through the editor.
    pub files: bool,
}

/// Our answer to `request`, and what the client offers.
pub fn answer(request: &InitializeRequest) -> (InitializeResponse, ClientOffers) {
    let fs = &request.client_capabilities.fs;
    let offers = ClientOffers {
        files: fs.read_text_file && fs.write_text_file,
    };
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
        .mcp_capabilities(McpCapabilities::new().http(true))
        .session_capabilities(SessionCapabilities::new().list(SessionListCapabilities::new()));
    let response = InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .agent_info(
            Implementation::new("agentbus", env!("CARGO_PKG_VERSION"))
                .title("agentbus".to_string()),
        );
    (response, offers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{ClientCapabilities, FileSystemCapabilities};

    #[test]
    fn we_offer_loading_listing_embedded_context_and_http_mcp() {
        let (response, offers) = answer(&InitializeRequest::new(ProtocolVersion::V1));
        let caps = &response.agent_capabilities;
        assert_eq!(response.protocol_version, ProtocolVersion::V1);
        assert!(caps.load_session);
        assert!(caps.prompt_capabilities.embedded_context);
        assert!(!caps.prompt_capabilities.image);
        assert!(caps.mcp_capabilities.http && !caps.mcp_capabilities.sse);
        assert!(caps.session_capabilities.list.is_some());
        assert_eq!(offers, ClientOffers { files: false });
    }

    #[test]
    fn files_go_through_the_client_only_when_it_reads_and_writes() {
        let with = |read, write| {
            let fs = FileSystemCapabilities::new()
                .read_text_file(read)
                .write_text_file(write);
            let request = InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(ClientCapabilities::new().fs(fs));
            answer(&request).1.files
        };
        assert!(with(true, true));
        assert!(!with(true, false));
        assert!(!with(false, true));
    }
}
