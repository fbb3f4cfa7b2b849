//! The test kit's own tests, as one test target: every module below was a
//! test binary of its own. `support` is the tiny HTTP client and SSE frame
//! splitter they share.

mod support;

mod anthropic_stream;
mod behaviour;
mod binary;
mod context_window;
mod fixtures;
mod offered_tools;
mod openai_stream;
mod prompt_cache;
mod responses_stream;
mod test_mcp_server;
