//! What the server offers: health (on a node of a cluster, the cluster's
//! nodes too), model profiles, named agents, tools and MCP servers.
//! Read-only; never shows a key or a token.

use super::error::{ApiError, ApiQuery, ErrorBody};
use super::state::AppState;
use crate::api::{
    Agent, Agents, AgentsQuery, ClusterHealth, ClusterNode, Health, Model, Models, Prices, Tools,
};
use axum::Json;
use axum::extract::State;

#[utoipa::path(get, path = "/v1/health", tag = "server", responses((status = 200, description = "Success", body = Health)))]
pub async fn health(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        sessions_loaded: state.runtime.loaded_sessions().await.len(),
        cluster: cluster_health(&state).await,
    })
}

/// This node and the cluster's nodes, on a node of a cluster.
async fn cluster_health(state: &AppState) -> Option<ClusterHealth> {
    let (node_id, name) = state.runtime.node()?;
    let (nodes, error) = match state.runtime.cluster_nodes().await? {
        Ok(nodes) => (nodes, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let nodes = nodes
        .into_iter()
        .map(|node| ClusterNode {
            node_id: node.node_id.to_string(),
            name: node.name,
            started_at: node.started_at,
            expires_at: node.expires_at,
            alive: node.alive,
            sessions: node.sessions,
        })
        .collect();
    Some(ClusterHealth {
        node_id: node_id.to_string(),
        name,
        nodes,
        live: state.runtime.live_stats().map(Into::into),
        error,
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
            pricing: info.pricing.map(|p| Prices {
                input_per_mtok: p.input_per_mtok,
                output_per_mtok: p.output_per_mtok,
                cache_read_per_mtok: p.cache_read_per_mtok,
                cache_write_per_mtok: p.cache_write_per_mtok,
            }),
        })
        .collect();
    Json(Models {
        default: settings.model.clone(),
        models,
    })
}

#[utoipa::path(get, path = "/v1/agents", tag = "server", params(AgentsQuery),
    responses((status = 200, description = "The agents a session in the workspace can run as", body = Agents),
              (status = 400, description = "The request is invalid; the error says why", body = ErrorBody)))]
pub async fn agents(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<AgentsQuery>,
) -> Result<Json<Agents>, ApiError> {
    let workspace = match &query.workspace {
        None => None,
        Some(dir) => {
            let path = std::path::PathBuf::from(dir);
            if !path.is_absolute() || !path.is_dir() {
                return Err(ApiError::bad_request(format!(
                    "workspace `{dir}` is not an absolute path of a directory on the server"
                )));
            }
            Some(path)
        }
    };
    let (agents, problems) = state.runtime.agents(workspace.as_deref()).await;
    let agents = agents
        .into_iter()
        .map(|a| Agent {
            name: a.name,
            description: a.description,
            source: a.source,
        })
        .collect();
    Ok(Json(Agents { agents, problems }))
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
