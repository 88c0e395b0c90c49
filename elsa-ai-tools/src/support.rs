//! What every built-in tool shares: how its metadata is built, how its input is read, the
//! "first N with a more-available marker" shape of lists, and text clipping.

use elsa_ai_abstractions::{
    AiError, AiToolDefinition, AiToolExecutionContext, AuditBehavior, DangerLevel, Permission,
    TenantBehavior, ToolMutability, ToolSource,
};
use elsa_workflows::{Page, PageRequest};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The metadata of a built-in tool whose arguments are `I`. Every built-in tool works on the
/// caller's tenant only ([`TenantBehavior::TenantScoped`]); read-only tools are on by
/// default, proposal tools wait for an administrator.
pub(crate) fn built_in<I: JsonSchema>(
    name: &str,
    display_name: &str,
    description: &str,
    mutability: ToolMutability,
    danger_level: DangerLevel,
    permissions: &[Permission],
    audit_behavior: AuditBehavior,
) -> AiToolDefinition {
    AiToolDefinition {
        name: name.to_owned(),
        display_name: display_name.to_owned(),
        description: description.to_owned(),
        input_schema: AiToolDefinition::schema_for::<I>(),
        mutability,
        danger_level,
        permissions: permissions.to_vec(),
        tenant_behavior: TenantBehavior::TenantScoped,
        audit_behavior,
        allowed_agents: None,
        source: ToolSource::BuiltIn,
        enabled_by_default: mutability == ToolMutability::ReadOnly,
        timeout: None,
    }
}

/// The tool's arguments as its input type: 400 `invalid_arguments` naming the problem.
/// The governor has already checked them against the schema generated from the same type,
/// so this fails only for tools called around the governor.
pub(crate) fn input<I: DeserializeOwned>(context: &AiToolExecutionContext) -> Result<I, AiError> {
    context.arguments()
}

/// 404 for an id the caller's tenant does not have: the same words whether it never existed,
/// was deleted, or belongs to another tenant (the stores cannot tell these apart either).
pub(crate) fn not_found(what: &str, id: &str) -> AiError {
    AiError::not_found(format!("{what} {}", quoted(id)))
}

/// A model-supplied id for a message: quoted and clipped.
pub(crate) fn quoted(id: &str) -> String {
    format!("'{}'", clip(id, 120))
}

/// A tool's result as JSON (500 if it cannot be serialised, which compact result types never
/// trigger).
pub(crate) fn to_json<T: Serialize>(result: &T) -> Result<serde_json::Value, AiError> {
    serde_json::to_value(result)
        .map_err(|e| AiError::internal("serialisation_failed", e.to_string()))
}

/// 400 with `code` for arguments the schema allows but the tool cannot use.
pub(crate) fn invalid(code: &str, message: impl Into<String>) -> AiError {
    AiError::bad_request(code, message)
}

/// The default and largest page a listing tool returns.
pub(crate) const DEFAULT_LIMIT: usize = 20;
/// The largest page a listing tool returns, whatever the model asks for.
pub(crate) const MAX_LIMIT: usize = 50;

/// The page a tool asks its store for: `offset` and `limit` (1..=[`MAX_LIMIT`], default
/// [`DEFAULT_LIMIT`]).
pub(crate) fn page(offset: Option<usize>, limit: Option<usize>) -> PageRequest {
    PageRequest::new(
        offset.unwrap_or(0),
        limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
    )
}

/// A list as a model reads it: how many there are, which slice this is, whether more are
/// available (`truncated`, with the offset to ask for next) and the items.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Listing<T> {
    /// How many items exist in all.
    pub total: usize,
    /// How many are in `items`.
    pub returned: usize,
    /// Whether more items exist than `items` holds.
    pub truncated: bool,
    /// The offset of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// The items.
    pub items: Vec<T>,
}

impl<T> Listing<T> {
    /// A store page as a listing.
    pub fn from_page(page: Page<T>) -> Self {
        let more = page.has_more();
        let next = page.offset + page.items.len();
        Self {
            total: page.total,
            returned: page.items.len(),
            truncated: more,
            next_offset: more.then_some(next),
            items: page.items,
        }
    }

    /// The first `limit` of `items` (no paging: a list inside a larger result).
    pub fn first(items: impl IntoIterator<Item = T>, limit: usize) -> Self {
        let mut total = 0;
        let mut kept = Vec::new();
        for item in items {
            if total < limit {
                kept.push(item);
            }
            total += 1;
        }
        Self {
            total,
            returned: kept.len(),
            truncated: total > kept.len(),
            next_offset: None,
            items: kept,
        }
    }
}

/// `text` cut to at most `max` characters, marked with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => {
            let mut out = text[..end].trim_end().to_owned();
            out.push('…');
            out
        }
    }
}

/// JSON rendered compactly and clipped to `max` characters.
pub(crate) fn clip_json(value: &serde_json::Value, max: usize) -> String {
    match value {
        serde_json::Value::String(text) => clip(text, max),
        other => clip(&other.to_string(), max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_mark_what_is_left_out() {
        let listing = Listing::first(0..5, 2);
        assert_eq!(
            (listing.total, listing.returned, listing.truncated),
            (5, 2, true)
        );
        let all = Listing::first(0..2, 5);
        assert!(!all.truncated);
        let json = serde_json::to_value(&all).unwrap();
        assert!(json.get("nextOffset").is_none());

        let page = PageRequest::new(2, 2).slice((0..5).collect::<Vec<_>>());
        let listing = Listing::from_page(page);
        assert_eq!(listing.next_offset, Some(4));
        assert!(listing.truncated);
        let last = Listing::from_page(PageRequest::new(4, 2).slice((0..5).collect::<Vec<_>>()));
        assert_eq!((last.truncated, last.next_offset), (false, None));
    }

    #[test]
    fn clipping_counts_characters_and_marks_the_cut() {
        assert_eq!(clip("hello", 5), "hello");
        assert_eq!(clip("hello world", 5), "hello…");
        assert_eq!(clip("ééééé", 2), "éé…");
        assert_eq!(clip_json(&serde_json::json!({"a": 1}), 100), r#"{"a":1}"#);
    }

    #[test]
    fn pages_are_bounded() {
        assert_eq!(page(None, None), PageRequest::new(0, DEFAULT_LIMIT));
        assert_eq!(page(Some(3), Some(1000)).limit, MAX_LIMIT);
        assert_eq!(page(None, Some(0)).limit, 1);
    }
}
