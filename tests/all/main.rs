//! The end-to-end tests of the built `agentbus` binary, and the layout
//! check of the source (`layout`), as one test target: every module below
//! was a test binary of its own, and each linked the shared `support` code
//! again. One target compiles and links it once.
//!
//! Run one area with a filter on its module, e.g.
//! `cargo test --test all serve::`; the tests against a real local model
//! with `cargo test --test all local_model:: -- --ignored`.

mod support;

mod acp;
mod agents;
mod api_contract;
mod background_and_web;
mod caching_figures;
mod chat;
mod chat_terminal;
mod checkpoints;
mod commands;
mod config;
mod context;
mod context_matrix;
mod durability;
mod faults;
mod first_run;
mod given_mcp;
mod hooks;
mod images;
mod instructions;
mod layout;
mod local_model;
mod many_sessions;
mod mcp;
mod metrics;
mod permissions;
mod plan;
mod postgres_store;
mod prompt_caching;
mod readme;
mod responses;
mod retries;
mod roles;
mod run;
mod serve;
mod sessions;
mod skills;
mod subagents;
mod telemetry;
mod terminal;
mod wire_formats;
