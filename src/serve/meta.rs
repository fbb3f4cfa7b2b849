//! What the server offers: health, model profiles, tools and MCP servers.
//! Read-only; never shows a key or a token.

use super::state::AppState;
use crate::api::{Health, Model, Models, Tools};
use axum::Json;
use axum::extract::State;

#[utoipa::path(get, path = "/v1/health", tag = "server", responses((status = 200, description = "Success", body = Health)))]
pub async fn health(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        sessions_loaded: state.runtime.loaded_sessions().await.len(),
    })
}

#[utoipa::path(get, path = "/v1/models", tag = "server", responses((status = 200, description = "Success", body = Models)))]
pub async fn models(State(state): State<AppState>) -> Json<Models> {
    let settings = state.runtime.settings();
    let models = settings
        .model_infos()
        .into_iter()
        .map(|info| Model {
            name: info.name,
            provider: info.provider,
            model: info.model,
            base_url: info.base_url,
        })
        .collect();
    Json(Models {
        default: settings.model.clone(),
        models,
    })
}

#[utoipa::path(get, path = "/v1/tools", tag = "server", responses((status = 200, description = "Success", body = Tools)))]
pub async fn tools(State(state): State<AppState>) -> Json<Tools> {
    let catalog = state.runtime.catalog().borrow().clone();
    let tools = catalog
        .shared
        .tools
        .iter()
        .map(|t| serde_json::json!({"name": t.name, "description": t.description, "origin": t.origin}))
        .collect();
    let mcp_servers = serde_json::to_value(&catalog.shared.servers).unwrap_or_default();
    Json(Tools { tools, mcp_servers })
}
