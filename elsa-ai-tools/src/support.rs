//! What every built-in tool shares: how its metadata is built, how its input is read, the
//! "first N with a more-available marker" shape of lists, and text clipping.

use elsa_ai_abstractions::{
    AiError, AiToolDefinition, AiToolExecutionContext, AuditBehavior, DangerLevel, GroundingLimits,
    Permission, TenantBehavior, ToolMutability, ToolSource,
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
        grounding_name: None,
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

/// One argument given under either of two spellings (upstream Elsa's documents and code
/// disagree): 400 `conflicting_arguments` when both are given and differ.
pub(crate) fn either<T: PartialEq>(
    names: (&str, &str),
    first: Option<T>,
    second: Option<T>,
) -> Result<Option<T>, AiError> {
    match (first, second) {
        (Some(a), Some(b)) if a != b => Err(invalid(
            "conflicting_arguments",
            format!(
                "'{}' and '{}' are one argument spelled two ways, with different values; give one",
                names.0, names.1
            ),
        )),
        (a, b) => Ok(a.or(b)),
    }
}

/// Text given under either of two spellings, trimmed (blank counts as not given).
pub(crate) fn either_text(
    names: (&str, &str),
    first: Option<String>,
    second: Option<String>,
) -> Result<Option<String>, AiError> {
    let trimmed = |t: Option<String>| t.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    either(names, trimmed(first), trimmed(second))
}

/// The default and largest page a listing tool returns.
pub(crate) const DEFAULT_LIMIT: usize = 20;
/// The largest page a listing tool returns, whatever the model asks for.
pub(crate) const MAX_LIMIT: usize = 50;

/// The page a tool asks its store for: `offset` and `limit` (1..=[`MAX_LIMIT`], default
/// [`DEFAULT_LIMIT`]), never more than the grounding limits' `max_items`.
pub(crate) fn page(
    offset: Option<usize>,
    limit: Option<usize>,
    limits: &GroundingLimits,
) -> PageRequest {
    PageRequest::new(
        offset.unwrap_or(0),
        limit
            .unwrap_or(DEFAULT_LIMIT)
            .clamp(1, MAX_LIMIT)
            .min(limits.max_items.max(1)),
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

/// How long a recorded string may be, how many items of a recorded list or object are kept,
/// and how deep recorded values are shown.
const VALUE_CHARS: usize = 400;
const VALUE_ITEMS: usize = 25;
const VALUE_DEPTH: usize = 5;

/// A value Elsa recorded (an input, output or variable), cut to a size a model can read while
/// keeping its shape: strings clipped, lists and objects cut to their first items with a
/// `…` marker saying how many were left out, nesting below a few levels replaced by a
/// marker. Object keys are kept as recorded (never turned into text), so that the governor's
/// redaction, which recognises sensitive values by their keys, sees every one of them.
pub(crate) fn bounded(value: &serde_json::Value) -> serde_json::Value {
    bounded_at(value, 0)
}

fn bounded_at(value: &serde_json::Value, depth: usize) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(text) => Value::String(clip(text, VALUE_CHARS)),
        Value::Array(_) | Value::Object(_) if depth >= VALUE_DEPTH => {
            Value::String("… (nested deeper than shown)".to_owned())
        }
        Value::Array(items) => {
            let mut kept: Vec<Value> = items
                .iter()
                .take(VALUE_ITEMS)
                .map(|item| bounded_at(item, depth + 1))
                .collect();
            if items.len() > VALUE_ITEMS {
                kept.push(Value::String(format!(
                    "… {} more items",
                    items.len() - VALUE_ITEMS
                )));
            }
            Value::Array(kept)
        }
        Value::Object(map) => {
            let mut kept: serde_json::Map<String, Value> = map
                .iter()
                .take(VALUE_ITEMS)
                .map(|(key, item)| (key.clone(), bounded_at(item, depth + 1)))
                .collect();
            if map.len() > VALUE_ITEMS {
                kept.insert(
                    "…".to_owned(),
                    Value::String(format!("{} more entries", map.len() - VALUE_ITEMS)),
                );
            }
            Value::Object(kept)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_values_keep_their_keys_and_shape_within_bounds() {
        let long = "x".repeat(1_000);
        let value = serde_json::json!({
            "Password": "hunter2",
            "nested": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}},
            "list": (0..30).collect::<Vec<_>>(),
            "text": long,
        });
        let shown = bounded(&value);
        assert_eq!(shown["Password"], "hunter2", "values are left to redaction");
        assert_eq!(shown["list"].as_array().unwrap().len(), VALUE_ITEMS + 1);
        assert_eq!(shown["list"][VALUE_ITEMS], "… 5 more items");
        assert!(shown["text"].as_str().unwrap().chars().count() <= VALUE_CHARS + 1);
        assert_eq!(
            shown["nested"]["a"]["b"]["c"]["d"],
            "… (nested deeper than shown)"
        );
        let wide: serde_json::Map<String, serde_json::Value> = (0..40)
            .map(|i| (format!("k{i}"), serde_json::json!(i)))
            .collect();
        let shown = bounded(&serde_json::Value::Object(wide));
        assert_eq!(shown["…"], "15 more entries");
    }

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
        let wide = GroundingLimits {
            max_items: 500,
            ..GroundingLimits::default()
        };
        assert_eq!(page(None, None, &wide), PageRequest::new(0, DEFAULT_LIMIT));
        assert_eq!(page(Some(3), Some(1000), &wide).limit, MAX_LIMIT);
        assert_eq!(page(None, Some(0), &wide).limit, 1);
        let narrow = GroundingLimits {
            max_items: 5,
            ..GroundingLimits::default()
        };
        assert_eq!(page(None, None, &narrow).limit, 5);
    }
}
