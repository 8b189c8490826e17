//! `GET /metadata` on the HTTP endpoint: the committed metadata image of
//! this node as JSON ([`crate::metadata::view::ImageView`]: finalized feature
//! levels, registered controllers with their endpoints, offset), for
//! operators and tests. Each node answers from its own image, which may lag
//! the leader's by the records not yet fetched.
//!
//! Owns the route only; it must not read the log (the metadata listener
//! publishes the view after each commit).

use axum::{
    Router,
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use tokio::sync::watch;

use crate::metadata::view::ImageView;

/// The `/metadata` route over the view the metadata listener publishes.
pub fn router(view: watch::Receiver<ImageView>) -> Router {
    Router::new()
        .route("/metadata", get(metadata))
        .with_state(view)
}

async fn metadata(State(view): State<watch::Receiver<ImageView>>) -> impl IntoResponse {
    let body = serde_json::to_string(&*view.borrow());
    match body {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body + "\n",
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding the metadata image: {e}\n"),
        )
            .into_response(),
    }
}
