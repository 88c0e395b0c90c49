//! JSON plumbing shared by the models: parsing that remembers where it failed, JSON paths,
//! `{"$id", "$values"}` array wrappers and typed field access with path-bearing errors.

use std::cell::RefCell;
use std::fmt::{self, Write as _};

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::ParseError;

/// The deepest nesting a document may have. serde_json's parser stops at 128 levels; values
/// built in code are held to a little more, so that walking them can never exhaust the stack.
pub(crate) const MAX_DEPTH: usize = 192;

/// One step of a JSON path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A location inside a document, as the steps from its root.
pub(crate) type Location = Vec<Seg>;

/// Renders a location as a JSON path: `$.root.activities[3].type`, `$['odd key']`.
pub(crate) fn render_path(location: &[Seg]) -> String {
    let mut out = String::from("$");
    for seg in location {
        match seg {
            Seg::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
            Seg::Key(key) if is_plain_key(key) => {
                out.push('.');
                out.push_str(key);
            }
            Seg::Key(key) => {
                out.push_str("['");
                for c in key.chars() {
                    if c == '\'' || c == '\\' {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push_str("']");
            }
        }
    }
    out
}

fn is_plain_key(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Extends a location by one key.
pub(crate) fn key(location: &[Seg], key: &str) -> Location {
    let mut out = location.to_vec();
    out.push(Seg::Key(key.to_owned()));
    out
}

/// Extends a location by one index.
pub(crate) fn index(location: &[Seg], index: usize) -> Location {
    let mut out = location.to_vec();
    out.push(Seg::Index(index));
    out
}

/// A [`ParseError`] at `location`.
pub(crate) fn error_at(location: &[Seg], problem: impl Into<String>) -> ParseError {
    ParseError {
        problem: problem.into(),
        path: render_path(location),
    }
}

/// The JSON type of a value, as a person would say it.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Removes a leading UTF-8 byte order mark.
pub(crate) fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Parses JSON text (a leading BOM is ignored) into a value; a syntax error names the path
/// of the value being read when the parser stopped.
pub(crate) fn parse_text(text: &str) -> Result<Value, ParseError> {
    let tracker = Tracker::default();
    let mut deserializer = serde_json::Deserializer::from_str(strip_bom(text));
    let parsed = ValueSeed(&tracker)
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|error| {
        let location = tracker.segs.borrow().clone();
        error_at(&location, format!("not valid JSON: {error}"))
    })
}

/// Parses JSON bytes: UTF-8 with or without a BOM.
pub(crate) fn parse_bytes(bytes: &[u8]) -> Result<Value, ParseError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_text(text),
        Err(error) => Err(error_at(&[], format!("not UTF-8 text: {error}"))),
    }
}

/// Checks, without recursion, that `value` nests no deeper than [`MAX_DEPTH`].
pub(crate) fn check_depth(value: &Value) -> Result<(), ParseError> {
    let mut stack: Vec<(&Value, usize)> = vec![(value, 1)];
    while let Some((value, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(error_at(
                &[],
                format!("JSON nests deeper than {MAX_DEPTH} levels"),
            ));
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    Ok(())
}

/// The items of a JSON array, or of a `{"$id", "$values": [...]}` wrapper, with the extra path
/// step the wrapper adds.
pub(crate) fn array_like(value: &Value) -> Option<(&Vec<Value>, Option<Seg>)> {
    match value {
        Value::Array(items) => Some((items, None)),
        Value::Object(map) => match map.get("$values") {
            Some(Value::Array(items)) => Some((items, Some(Seg::Key("$values".into())))),
            _ => None,
        },
        _ => None,
    }
}

/// Mutable access to the items of an array or `$values` wrapper.
pub(crate) fn array_like_mut(value: &mut Value) -> Option<&mut Vec<Value>> {
    match value {
        Value::Array(items) => Some(items),
        Value::Object(map) => match map.get_mut("$values") {
            Some(Value::Array(items)) => Some(items),
            _ => None,
        },
        _ => None,
    }
}

/// The items of an optional array-like field; `None` when absent or null, an error for any
/// other non-array value.
pub(crate) fn optional_array<'a>(
    map: &'a Map<String, Value>,
    field: &str,
    location: &[Seg],
) -> Result<Option<(&'a Vec<Value>, Location)>, ParseError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match array_like(value) {
            Some((items, wrapper)) => {
                let mut at = key(location, field);
                at.extend(wrapper);
                Ok(Some((items, at)))
            }
            None => Err(error_at(
                &key(location, field),
                format!("`{field}` must be an array, found {}", kind_of(value)),
            )),
        },
    }
}

/// An optional string field; null counts as absent.
pub(crate) fn optional_str<'a>(
    map: &'a Map<String, Value>,
    field: &str,
    location: &[Seg],
) -> Result<Option<&'a str>, ParseError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(error_at(
            &key(location, field),
            format!("`{field}` must be a string, found {}", kind_of(other)),
        )),
    }
}

/// An optional boolean field; null counts as absent.
pub(crate) fn optional_bool(
    map: &Map<String, Value>,
    field: &str,
    location: &[Seg],
) -> Result<Option<bool>, ParseError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(other) => Err(error_at(
            &key(location, field),
            format!("`{field}` must be a boolean, found {}", kind_of(other)),
        )),
    }
}

/// An optional 32-bit integer field; null counts as absent.
pub(crate) fn optional_i32(
    map: &Map<String, Value>,
    field: &str,
    location: &[Seg],
) -> Result<Option<i32>, ParseError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => number
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                error_at(
                    &key(location, field),
                    format!("`{field}` must be a 32-bit integer, found {number}"),
                )
            }),
        Some(other) => Err(error_at(
            &key(location, field),
            format!("`{field}` must be an integer, found {}", kind_of(other)),
        )),
    }
}

/// The object at `value`, or an error naming what was expected there.
pub(crate) fn expect_object<'a>(
    value: &'a Value,
    location: &[Seg],
    what: &str,
) -> Result<&'a Map<String, Value>, ParseError> {
    value.as_object().ok_or_else(|| {
        error_at(
            location,
            format!("{what} must be a JSON object, found {}", kind_of(value)),
        )
    })
}

/// The map of an object value (an empty map for any other value).
pub(crate) fn into_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Follows a location to a mutable value.
pub(crate) fn pointer_mut<'a>(root: &'a mut Value, location: &[Seg]) -> Option<&'a mut Value> {
    let mut current = root;
    for seg in location {
        current = match (seg, current) {
            (Seg::Key(k), Value::Object(map)) => map.get_mut(k)?,
            (Seg::Index(i), Value::Array(items)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(current)
}

/// Follows a location, whose first step is a key, from a document's top-level map.
pub(crate) fn locate_mut<'a>(
    root: &'a mut Map<String, Value>,
    location: &[Seg],
) -> Option<&'a mut Value> {
    let (Seg::Key(first), rest) = location.split_first()? else {
        return None;
    };
    pointer_mut(root.get_mut(first)?, rest)
}

/// Remembers the path of the value being parsed, so that a syntax error can name it.
#[derive(Default)]
struct Tracker {
    segs: RefCell<Vec<Seg>>,
}

struct ValueSeed<'t>(&'t Tracker);

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor(self.0))
    }
}

struct ValueVisitor<'t>(&'t Tracker);

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.0.segs.borrow_mut().push(Seg::Index(items.len()));
            // On error the step stays pushed: the tracker then names the failing element.
            let next = seq.next_element_seed(ValueSeed(self.0))?;
            self.0.segs.borrow_mut().pop();
            match next {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(name) = access.next_key::<String>()? {
            self.0.segs.borrow_mut().push(Seg::Key(name.clone()));
            let value = access.next_value_seed(ValueSeed(self.0))?;
            self.0.segs.borrow_mut().pop();
            map.insert(name, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_plain_and_quoted_keys() {
        let location = vec![
            Seg::Key("root".into()),
            Seg::Key("activities".into()),
            Seg::Index(3),
            Seg::Key("odd key's".into()),
        ];
        assert_eq!(
            render_path(&location),
            "$.root.activities[3]['odd key\\'s']"
        );
        assert_eq!(render_path(&[]), "$");
    }

    #[test]
    fn syntax_errors_name_the_path_being_read() {
        let error = parse_text(r#"{"root": {"activities": [{"type": "A"}, {"type": tru}]}}"#)
            .expect_err("bad literal");
        assert_eq!(error.path, "$.root.activities[1].type");
        assert!(error.problem.starts_with("not valid JSON"), "{error}");
    }

    #[test]
    fn trailing_content_is_rejected_at_the_root() {
        let error = parse_text("{\"a\": 1}\n/* comment */").expect_err("trailing comment");
        assert_eq!(error.path, "$");
        assert!(error.problem.contains("trailing characters"), "{error}");
    }

    #[test]
    fn bom_is_ignored_and_values_match_serde_json() {
        let text = "\u{feff}{\"a\": [1, 2.5, \"x\", null, true, {\"b\": -3}]}";
        let parsed = parse_text(text).expect("valid JSON after the BOM");
        let expected: Value = serde_json::from_str(&text[3..]).expect("valid JSON");
        assert_eq!(parsed, expected);
        assert_eq!(parse_bytes(text.as_bytes()).expect("bytes"), expected);
        assert!(parse_bytes(b"\xff\xfe").is_err());
    }

    #[test]
    fn depth_is_bounded_without_recursion() {
        let mut value = Value::Null;
        for _ in 0..(MAX_DEPTH + 5) {
            value = Value::Array(vec![value]);
        }
        assert!(check_depth(&value).is_err());
        assert!(check_depth(&serde_json::json!([[1]])).is_ok());
    }

    #[test]
    fn dollar_values_wrappers_are_arrays() {
        let wrapped = serde_json::json!({"$id": "1", "$values": [1, 2]});
        let (items, step) = array_like(&wrapped).expect("wrapper");
        assert_eq!(items.len(), 2);
        assert_eq!(step, Some(Seg::Key("$values".into())));
        assert!(array_like(&serde_json::json!({"$id": "1"})).is_none());
    }
}
