//! A tool's argument schema as a model is shown it: what a model needs to write a call, and
//! nothing only a validator needs.
//!
//! The schemas tools declare are written for validation (the governor checks every call
//! against the full schema): nullable types, `null` defaults, formats, length bounds, a
//! title, `$defs` with references, and alias properties kept for other clients' spellings.
//! Sent as they are, they are most of a turn's prompt. The model's view keeps the types,
//! descriptions, enums, items and `required`, inlines references, and leaves out aliases (a
//! property whose description is only "Same as `other`." for another property): a model
//! writes the canonical name, and the full schema still accepts either.
//!
//! A view still longer than [`MODEL_SCHEMA_BUDGET`] then loses its deepest structure first:
//! below the deepest level at which it fits, an object or array keeps only its type and
//! description (the tool's description says what goes there, and the governor still checks
//! the whole shape). Without that, the proposal tools' drafts and patches were more than half
//! of a turn's prompt.
//!
//! The way back is [`model_arguments`]: a model's call with the optional arguments it left
//! empty (and that their own bounds would refuse) taken out before the governor sees it.

use serde_json::{Map, Value};

/// Keys a model needs; every other key of a schema object is left out.
const KEPT: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "anyOf",
    "oneOf",
];

/// How deep references are inlined before a schema is cut to `{"type": "object"}` (a
/// recursive schema would otherwise never end).
const MAX_DEPTH: usize = 8;

/// The most bytes of compact JSON a tool's model schema takes, when cutting its deepest
/// structure can bring it there. Every read tool's schema fits whole.
pub const MODEL_SCHEMA_BUDGET: usize = 1_600;

/// The model's view of `schema` (see the module documentation). The top-level description
/// is dropped: the tool's own description says it.
pub fn model_schema(schema: &Value) -> Value {
    let definitions = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Value::as_object);
    let mut compact = compact(schema, definitions, 0);
    if let Value::Object(object) = &mut compact {
        object.remove("description");
    }
    // The arguments themselves always stay, with their types and descriptions.
    let mut levels = MAX_DEPTH;
    while levels > 1 && compact.to_string().len() > MODEL_SCHEMA_BUDGET {
        levels -= 1;
        compact = pruned(compact, levels);
    }
    compact
}

/// A model's arguments for a tool whose full schema is `schema`, with the optional arguments
/// it left empty taken out. Small models fill in every parameter they are shown and write
/// `""`, `0` or `[]` for "none"; such a value is dropped only where the parameter's own lower
/// bound (`minLength`, `minimum`, `minItems`) would refuse it anyway, or where it is `null`.
/// Required arguments and every other value stay as written, and the governor still checks
/// the result against the whole schema.
pub fn model_arguments(schema: &Value, arguments: Value) -> Value {
    let Value::Object(mut arguments) = arguments else {
        return arguments;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema.get("properties").and_then(Value::as_object);
    arguments.retain(|name, value| {
        if required.contains(&name.as_str()) {
            return true;
        }
        let bound = |key: &str| {
            properties
                .and_then(|properties| properties.get(name))
                .and_then(|property| property.get(key))
                .and_then(Value::as_f64)
        };
        let refused_as_empty = match value {
            Value::Null => true,
            Value::String(text) => {
                text.is_empty() && bound("minLength").is_some_and(|min| min >= 1.0)
            }
            Value::Number(number) => number
                .as_f64()
                .zip(bound("minimum"))
                .is_some_and(|(number, min)| number == 0.0 && min > 0.0),
            Value::Array(items) => {
                items.is_empty() && bound("minItems").is_some_and(|min| min >= 1.0)
            }
            _ => false,
        };
        !refused_as_empty
    });
    Value::Object(arguments)
}

/// `schema` (already compact) with every object and array nested more than `levels` deep
/// reduced to its type and description. Depth counts properties, items and alternatives, as
/// [`compact`] does.
fn pruned(schema: Value, levels: usize) -> Value {
    let Value::Object(mut object) = schema else {
        return schema;
    };
    if levels == 0 {
        let kind = object.get("type").cloned().or_else(|| {
            if object.contains_key("properties") || object.contains_key("oneOf") {
                Some("object".into())
            } else {
                object.contains_key("items").then(|| "array".into())
            }
        });
        object.retain(|key, _| matches!(key.as_str(), "description" | "enum" | "const"));
        if let Some(kind) = kind {
            object.insert("type".into(), kind);
        }
        return Value::Object(object);
    }
    for (key, value) in &mut object {
        let taken = std::mem::take(value);
        *value = match (key.as_str(), taken) {
            ("properties", Value::Object(properties)) => Value::Object(
                properties
                    .into_iter()
                    .map(|(name, property)| (name, pruned(property, levels - 1)))
                    .collect(),
            ),
            ("items", items) => pruned(items, levels - 1),
            ("anyOf" | "oneOf", Value::Array(alternatives)) => Value::Array(
                alternatives
                    .into_iter()
                    .map(|alternative| pruned(alternative, levels - 1))
                    .collect(),
            ),
            (_, other) => other,
        };
    }
    Value::Object(object)
}

fn compact(schema: &Value, definitions: Option<&Map<String, Value>>, depth: usize) -> Value {
    let Value::Object(object) = schema else {
        return schema.clone();
    };
    if depth > MAX_DEPTH {
        return serde_json::json!({"type": "object"});
    }
    if let Some(target) = object.get("$ref").and_then(Value::as_str) {
        let name = target.rsplit('/').next().unwrap_or_default();
        let resolved = definitions.and_then(|defs| defs.get(name));
        let mut inlined = resolved.map_or_else(
            || serde_json::json!({"type": "object"}),
            |definition| compact(definition, definitions, depth + 1),
        );
        if let (Some(description), Value::Object(inlined)) =
            (object.get("description"), &mut inlined)
        {
            inlined.insert("description".into(), compact_text(description));
        }
        return inlined;
    }
    let mut out = Map::new();
    for (key, value) in object {
        if !KEPT.contains(&key.as_str()) {
            continue;
        }
        let value = match key.as_str() {
            "type" => without_null_type(value),
            "description" => compact_text(value),
            "properties" => properties(value, definitions, depth),
            "items" => compact(value, definitions, depth + 1),
            "anyOf" | "oneOf" => match alternatives(value, definitions, depth) {
                Alternatives::One(schema) => {
                    merge(&mut out, schema);
                    continue;
                }
                Alternatives::Enum(values) => {
                    out.insert("enum".into(), Value::Array(values));
                    if let Some(kind) = object_type_of_consts(value) {
                        out.entry("type").or_insert(kind);
                    }
                    continue;
                }
                Alternatives::Many(schemas) => Value::Array(schemas),
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

/// `["string", "null"]` is `"string"`: optional arguments are simply left out.
fn without_null_type(value: &Value) -> Value {
    match value {
        Value::Array(types) => {
            let kept: Vec<&Value> = types
                .iter()
                .filter(|t| t.as_str() != Some("null"))
                .collect();
            match kept.as_slice() {
                [only] => (*only).clone(),
                _ => Value::Array(kept.into_iter().cloned().collect()),
            }
        }
        other => other.clone(),
    }
}

fn compact_text(value: &Value) -> Value {
    match value.as_str() {
        Some(text) => Value::String(text.split_whitespace().collect::<Vec<_>>().join(" ")),
        None => value.clone(),
    }
}

fn properties(value: &Value, definitions: Option<&Map<String, Value>>, depth: usize) -> Value {
    let Value::Object(properties) = value else {
        return value.clone();
    };
    let kept = properties
        .iter()
        .filter(|(_, schema)| alias_of(schema).is_none_or(|of| !properties.contains_key(of)))
        .map(|(name, schema)| (name.clone(), compact(schema, definitions, depth + 1)))
        .collect();
    Value::Object(kept)
}

/// The property an alias stands for: its whole description is "Same as `x`." (or "The same
/// as x.").
fn alias_of(schema: &Value) -> Option<&str> {
    let description = schema.get("description")?.as_str()?.trim();
    let rest = description
        .strip_prefix("The same as ")
        .or_else(|| description.strip_prefix("Same as "))?;
    let name = rest.trim_end_matches('.').trim_matches('`');
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(name)
}

enum Alternatives {
    /// One schema besides `null`: the property is that schema, optional.
    One(Value),
    /// Only constants: an enum.
    Enum(Vec<Value>),
    /// Several real alternatives, each compacted.
    Many(Vec<Value>),
}

fn alternatives(
    value: &Value,
    definitions: Option<&Map<String, Value>>,
    depth: usize,
) -> Alternatives {
    let schemas: Vec<&Value> = value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|item| item.get("type").and_then(Value::as_str) != Some("null"))
                .collect()
        })
        .unwrap_or_default();
    if let Some(consts) = schemas
        .iter()
        .map(|schema| schema.get("const").cloned())
        .collect::<Option<Vec<_>>>()
        .filter(|consts| !consts.is_empty())
    {
        return Alternatives::Enum(consts);
    }
    match schemas.as_slice() {
        [only] => Alternatives::One(compact(only, definitions, depth + 1)),
        _ => Alternatives::Many(
            schemas
                .into_iter()
                .map(|schema| compact(schema, definitions, depth + 1))
                .collect(),
        ),
    }
}

/// The type of an enum made of constants, when they share one (`"string"`).
fn object_type_of_consts(value: &Value) -> Option<Value> {
    let kinds: Vec<&str> = value
        .as_array()?
        .iter()
        .filter_map(|item| item.get("const"))
        .map(|constant| match constant {
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "boolean",
            _ => "object",
        })
        .collect();
    let first = *kinds.first()?;
    kinds
        .iter()
        .all(|kind| *kind == first)
        .then(|| Value::String(first.into()))
}

/// Puts `schema`'s keys into `out`, keeping a description `out` already has.
fn merge(out: &mut Map<String, Value>, schema: Value) {
    if let Value::Object(schema) = schema {
        for (key, value) in schema {
            out.entry(key).or_insert(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn validation_only_keys_nullable_types_refs_and_aliases_are_left_out() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "ListDefinitionsInput",
            "description": "Arguments of `workflow.listDefinitions`.",
            "type": "object",
            "properties": {
                "text": {"description": "Matched against\nid and name.", "type": ["string", "null"], "maxLength": 200, "default": null},
                "query": {"description": "The same as text.", "type": ["string", "null"], "default": null},
                "limit": {"description": "How many.", "type": ["integer", "null"], "format": "uint", "minimum": 1, "maximum": 50, "default": null},
                "filter": {"description": "Which versions.", "anyOf": [{"$ref": "#/$defs/ListFilter"}, {"type": "null"}]},
                "ids": {"type": "array", "items": {"type": "string", "minLength": 1}},
                "definitionId": {"description": "Only this definition.", "type": "string"},
            },
            "required": ["definitionId"],
            "additionalProperties": false,
            "$defs": {"ListFilter": {"description": "Which versions are listed.", "oneOf": [
                {"description": "Newest.", "type": "string", "const": "latest"},
                {"description": "Published only.", "type": "string", "const": "published"},
            ]}},
        });
        assert_eq!(
            model_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "text": {"description": "Matched against id and name.", "type": "string"},
                    "limit": {"description": "How many.", "type": "integer"},
                    "filter": {"description": "Which versions.", "enum": ["latest", "published"], "type": "string"},
                    "ids": {"type": "array", "items": {"type": "string"}},
                    "definitionId": {"description": "Only this definition.", "type": "string"},
                },
                "required": ["definitionId"],
            })
        );
    }

    /// A patch-like schema: a list of operations, each an object of its own.
    fn operations_schema(count: usize) -> Value {
        let alternatives: Vec<Value> = (0..count)
            .map(|i| {
                json!({
                    "description": format!("Operation {i}, which changes one part of the workflow."),
                    "type": "object",
                    "properties": {
                        "op": {"type": "string", "const": format!("op{i}")},
                        "target": {"description": "The activity it changes.", "type": "string"},
                        "options": {"type": "object", "properties": {"flag": {"type": "boolean"}}},
                    },
                    "required": ["op", "target"],
                })
            })
            .collect();
        json!({
            "type": "object",
            "properties": {
                "definitionId": {"description": "The definition to change.", "type": "string"},
                "operations": {
                    "description": "The changes, in order.",
                    "type": "array",
                    "items": {"description": "One change.", "oneOf": alternatives},
                },
            },
            "required": ["definitionId", "operations"],
        })
    }

    #[test]
    fn a_schema_within_the_budget_keeps_its_whole_structure() {
        let schema = operations_schema(2);
        let view = model_schema(&schema);
        assert!(view.to_string().len() <= MODEL_SCHEMA_BUDGET);
        assert_eq!(
            view["properties"]["operations"]["items"]["oneOf"][1]["properties"]["options"]["properties"]
                ["flag"]["type"],
            "boolean"
        );
    }

    #[test]
    fn a_schema_over_the_budget_loses_its_deepest_structure_first() {
        let schema = operations_schema(12);
        assert!(compact(&schema, None, 0).to_string().len() > MODEL_SCHEMA_BUDGET);
        let view = model_schema(&schema);
        assert!(view.to_string().len() <= MODEL_SCHEMA_BUDGET, "{view}");
        // The arguments, their types, descriptions and `required` stay.
        assert_eq!(view["required"], json!(["definitionId", "operations"]));
        assert_eq!(view["properties"]["definitionId"]["type"], "string");
        let operations = &view["properties"]["operations"];
        assert_eq!(operations["type"], "array");
        assert_eq!(operations["description"], "The changes, in order.");
        // What is cut keeps its type and description, never a dangling half.
        let items = &operations["items"];
        assert_eq!(items["description"], "One change.");
        for alternative in items["oneOf"].as_array().expect("alternatives") {
            assert_eq!(alternative["type"], "object");
            assert!(alternative["description"].is_string());
            assert!(alternative.get("properties").is_none(), "{alternative}");
        }
    }

    #[test]
    fn a_schema_that_cannot_fit_keeps_its_arguments() {
        let properties: Map<String, Value> = (0..100)
            .map(|i| (format!("argument{i}"), json!({"description": "One of many arguments.", "type": "object", "properties": {"x": {"type": "string"}}})))
            .collect();
        let view = model_schema(&json!({"type": "object", "properties": properties}));
        let kept = view["properties"].as_object().expect("properties");
        assert_eq!(kept.len(), 100);
        assert_eq!(
            kept["argument7"],
            json!({"description": "One of many arguments.", "type": "object"})
        );
    }

    #[test]
    fn a_models_empty_optional_arguments_are_dropped_only_where_their_bounds_refuse_them() {
        let schema = json!({
            "type": "object",
            "properties": {
                "definitionId": {"type": "string", "minLength": 1},
                "name": {"type": ["string", "null"], "minLength": 1},
                "text": {"type": ["string", "null"]},
                "version": {"type": ["integer", "null"], "minimum": 1},
                "offset": {"type": ["integer", "null"], "minimum": 0},
                "ids": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "tags": {"type": "array", "items": {"type": "string"}},
                "published": {"type": ["boolean", "null"]},
                "filter": {"type": ["string", "null"]},
            },
            "required": ["definitionId"],
        });
        let written = json!({
            "definitionId": "", "name": "", "text": "", "version": 0, "offset": 0,
            "ids": [], "tags": [], "published": false, "filter": null,
        });
        assert_eq!(
            model_arguments(&schema, written),
            json!({
                // Required: stays, for the governor to refuse with its reason.
                "definitionId": "",
                // No lower bound refuses these: they mean what they say.
                "text": "", "offset": 0, "tags": [], "published": false,
            })
        );
        assert_eq!(
            model_arguments(&schema, json!("not an object")),
            json!("not an object")
        );
    }

    #[test]
    fn an_alias_of_nothing_stays_and_recursive_references_end() {
        let schema = json!({
            "type": "object",
            "properties": {"q": {"description": "Same as missing.", "type": "string"},
                           "node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
        });
        let compact = model_schema(&schema);
        assert_eq!(compact["properties"]["q"]["type"], "string");
        assert_eq!(compact["properties"]["node"]["type"], "object");
        assert!(compact.to_string().len() < 2_000, "{compact}");
    }
}
