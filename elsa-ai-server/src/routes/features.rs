//! `GET /features/installed` and `GET /features/installed/{fullName}`: the feature probe
//! Elsa Studio sends before it shows its Weaver panel (it shows the panel only when the
//! list names [`AI_FEATURE`] and the single lookup answers 200).

use axum::Json;
use axum::extract::Path;
use elsa_ai_abstractions::AiError;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::Caller;

/// The full name Elsa Studio looks for.
pub const AI_FEATURE: &str = "Elsa.AI.Host.ShellFeatures.AIFeature";

/// One installed feature, as Elsa's feature API describes it.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeatureView {
    /// The short name.
    pub name: String,
    /// The namespace.
    pub namespace: String,
    /// `namespace.name`, what clients look up.
    pub full_name: String,
    /// Name for people.
    pub display_name: String,
    /// What it provides.
    pub description: String,
}

/// The installed features.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct FeatureListView {
    /// The features.
    pub items: Vec<FeatureView>,
    /// How many there are.
    pub count: usize,
}

fn ai_feature() -> FeatureView {
    let (namespace, name) = AI_FEATURE.rsplit_once('.').unwrap_or(("", AI_FEATURE));
    FeatureView {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        full_name: AI_FEATURE.to_owned(),
        display_name: "Weaver AI".to_owned(),
        description: "Chat about workflows and their runs, governed tools and reviewable \
                      proposals, served by Weaver."
            .to_owned(),
    }
}

/// The features this server provides: the AI feature.
#[utoipa::path(
    get,
    path = "/features/installed",
    tag = "meta",
    responses(
        (status = 200, description = "The installed features.", body = FeatureListView),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
    )
)]
pub(crate) async fn installed_features(_caller: Caller) -> Json<FeatureListView> {
    let items = vec![ai_feature()];
    Json(FeatureListView {
        count: items.len(),
        items,
    })
}

/// One installed feature by its full name; 404 for any other name.
#[utoipa::path(
    get,
    path = "/features/installed/{fullName}",
    tag = "meta",
    params(("fullName" = String, Path, description = "The feature's full name.")),
    responses(
        (status = 200, description = "The feature.", body = FeatureView),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 404, description = "No such feature is installed.", body = ErrorBody),
    )
)]
pub(crate) async fn installed_feature(
    _caller: Caller,
    Path(full_name): Path<String>,
) -> Result<Json<FeatureView>, ApiError> {
    if full_name == AI_FEATURE {
        Ok(Json(ai_feature()))
    } else {
        Err(ApiError(AiError::NotFound {
            code: "feature_not_found".into(),
            message: format!("feature '{full_name}' is not installed"),
        }))
    }
}
