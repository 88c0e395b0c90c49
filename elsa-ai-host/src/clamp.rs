//! Keeps JSON inside a byte budget for model context, structurally: long strings are cut,
//! long arrays keep their first items, large objects keep every small field and share the
//! rest of the budget among their large ones. The result is still valid JSON and says what
//! it lost in a `_truncated` object:
//!
//! ```json
//! {"id": "wf-1", "activities": [{…}, {…}],
//!  "_truncated": {"originalBytes": 81234, "limitBytes": 4096,
//!                 "omitted": [{"path": "/activities", "omittedItems": 310}], "moreOmitted": 0}}
//! ```
//!
//! A root that is not an object is wrapped as `{"content": …, "_truncated": {…}}`. A cut
//! string ends with [`ResultClamp::STRING_MARKER`].

use std::io;

use serde_json::{Map, Value, json};

/// The size of `value` serialised as compact JSON, in bytes, without allocating it.
pub fn json_size(value: &Value) -> usize {
    serialized_size(value)
}

fn serialized_size<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = ByteCounter(0);
    // Writing to a counter cannot fail, and serialising JSON values cannot fail either.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

struct ByteCounter(usize);

impl io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A value after clamping.
#[derive(Clone, Debug, PartialEq)]
pub struct Clamped {
    /// The value, within the budget.
    pub value: Value,
    /// Whether anything was removed (then `value` carries a `_truncated` marker).
    pub truncated: bool,
    /// The size of the value before clamping, in bytes of compact JSON.
    pub original_bytes: usize,
}

/// Clamps JSON values to a byte budget of compact JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultClamp {
    limit: usize,
}

/// Smallest budget a child gets before it is dropped instead of cut.
const MIN_PARTIAL: usize = 24;

/// How many omissions the marker lists before it only counts them.
const MAX_LISTED: usize = 16;

#[derive(Debug)]
enum Omission {
    Items { path: String, count: usize },
    Keys { path: String, count: usize },
    Bytes { path: String, count: usize },
}

impl Omission {
    fn to_json(&self) -> Value {
        match self {
            Self::Items { path, count } => json!({"path": path, "omittedItems": count}),
            Self::Keys { path, count } => json!({"path": path, "omittedKeys": count}),
            Self::Bytes { path, count } => json!({"path": path, "omittedBytes": count}),
        }
    }
}

impl ResultClamp {
    /// The smallest budget a clamp accepts; smaller requests are raised to it.
    pub const MIN_LIMIT: usize = 256;

    /// The key of the truncation marker.
    pub const MARKER_KEY: &'static str = "_truncated";

    /// The suffix of a string that was cut.
    pub const STRING_MARKER: &'static str = "…[truncated]";

    /// A clamp to `limit_bytes` of compact JSON (at least [`Self::MIN_LIMIT`]).
    pub fn new(limit_bytes: usize) -> Self {
        Self {
            limit: limit_bytes.max(Self::MIN_LIMIT),
        }
    }

    /// The budget in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Clamps `value`; values within the budget are returned unchanged.
    pub fn clamp(&self, value: Value) -> Clamped {
        let size = json_size(&value);
        self.clamp_measured(value, size)
    }

    /// [`Self::clamp`] of a value whose compact JSON text is `original_bytes` long.
    pub(crate) fn clamp_measured(&self, value: Value, original_bytes: usize) -> Clamped {
        if original_bytes <= self.limit {
            return Clamped {
                value,
                truncated: false,
                original_bytes,
            };
        }
        let reserve = (self.limit / 8).clamp(128, 1024);
        let mut omissions = Vec::new();
        let content = fit(
            value,
            self.limit - reserve,
            &mut String::new(),
            &mut omissions,
        );
        let value = self.with_marker(content, original_bytes, &omissions);
        Clamped {
            value,
            truncated: true,
            original_bytes,
        }
    }

    /// Attaches the marker, listing as many omissions as the budget leaves room for.
    fn with_marker(&self, content: Value, original_bytes: usize, omissions: &[Omission]) -> Value {
        let marker = |listed: usize| {
            json!({
                "originalBytes": original_bytes,
                "limitBytes": self.limit,
                "omitted": omissions.iter().take(listed).map(Omission::to_json).collect::<Vec<_>>(),
                "moreOmitted": omissions.len().saturating_sub(listed),
            })
        };
        let mut root = match content {
            Value::Object(map) => map,
            other => {
                let mut map = Map::new();
                map.insert("content".to_owned(), other);
                map
            }
        };
        root.remove(Self::MARKER_KEY);
        // `,"_truncated":` plus the marker itself.
        let base =
            serialized_size(&root) + usize::from(!root.is_empty()) + Self::MARKER_KEY.len() + 3;
        for listed in (0..=omissions.len().min(MAX_LISTED)).rev() {
            let candidate = marker(listed);
            if base + json_size(&candidate) <= self.limit {
                root.insert(Self::MARKER_KEY.to_owned(), candidate);
                return Value::Object(root);
            }
        }
        // Only reachable if the size accounting went wrong: keep the marker, drop the content.
        let mut fallback = Map::new();
        fallback.insert(Self::MARKER_KEY.to_owned(), marker(0));
        Value::Object(fallback)
    }
}

fn push_pointer(path: &mut String, segment: &str) -> usize {
    let len = path.len();
    path.push('/');
    for c in segment.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
    len
}

/// Reduces `value` to at most `budget` bytes of compact JSON, recording what it removes.
fn fit(value: Value, budget: usize, path: &mut String, omissions: &mut Vec<Omission>) -> Value {
    if json_size(&value) <= budget {
        return value;
    }
    match value {
        Value::String(text) => fit_string(text, budget, path, omissions),
        Value::Array(items) => fit_array(items, budget, path, omissions),
        Value::Object(map) => fit_object(map, budget, path, omissions),
        // Scalars are tiny; callers never give them less than MIN_PARTIAL, so they fit.
        scalar => scalar,
    }
}

fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{08}' | '\u{0c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

fn fit_string(text: String, budget: usize, path: &str, omissions: &mut Vec<Omission>) -> Value {
    let marker = ResultClamp::STRING_MARKER;
    let room = budget.saturating_sub(2 + marker.len());
    let mut used = 0;
    let mut cut = 0;
    for (index, c) in text.char_indices() {
        let len = escaped_len(c);
        if used + len > room {
            break;
        }
        used += len;
        cut = index + c.len_utf8();
    }
    omissions.push(Omission::Bytes {
        path: path.to_owned(),
        count: text.len() - cut,
    });
    let mut kept = text;
    kept.truncate(cut);
    if budget >= 2 + used + marker.len() {
        kept.push_str(marker);
    }
    Value::String(kept)
}

fn fit_array(
    items: Vec<Value>,
    budget: usize,
    path: &mut String,
    omissions: &mut Vec<Omission>,
) -> Value {
    let total = items.len();
    let mut used = 2;
    let mut kept = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        let separator = usize::from(!kept.is_empty());
        let size = json_size(&item);
        if used + separator + size <= budget {
            used += separator + size;
            kept.push(item);
            continue;
        }
        let remaining = budget.saturating_sub(used + separator);
        if remaining >= MIN_PARTIAL
            && matches!(item, Value::String(_) | Value::Array(_) | Value::Object(_))
        {
            let restore = push_pointer(path, &index.to_string());
            kept.push(fit(item, remaining, path, omissions));
            path.truncate(restore);
        }
        break;
    }
    if kept.len() < total {
        omissions.push(Omission::Items {
            path: path.clone(),
            count: total - kept.len(),
        });
    }
    Value::Array(kept)
}

fn fit_object(
    map: Map<String, Value>,
    budget: usize,
    path: &mut String,
    omissions: &mut Vec<Omission>,
) -> Value {
    // Each entry costs `"key":` plus its value plus one separator (one too many, which is safe).
    let entries: Vec<(String, Value, usize, usize)> = map
        .into_iter()
        .map(|(key, value)| {
            let key_cost = json_size(&Value::String(key.clone())) + 2;
            let size = json_size(&value);
            (key, value, key_cost, size)
        })
        .collect();
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| entries[i].2 + entries[i].3);

    // Water-filling: entries smaller than an even share of what is left keep everything;
    // the rest split the remainder evenly.
    let mut allocation = vec![0usize; entries.len()];
    let mut remaining = budget.saturating_sub(2);
    for (position, &i) in order.iter().enumerate() {
        let share = remaining / (order.len() - position);
        let full = entries[i].2 + entries[i].3;
        let granted = full.min(share);
        allocation[i] = granted;
        remaining -= granted;
    }

    let mut kept = Map::new();
    let mut dropped = 0;
    for ((key, value, key_cost, size), granted) in entries.into_iter().zip(allocation) {
        if key_cost + size <= granted {
            kept.insert(key, value);
            continue;
        }
        let value_budget = granted.saturating_sub(key_cost);
        let cuttable = matches!(value, Value::String(_) | Value::Array(_) | Value::Object(_));
        if value_budget >= MIN_PARTIAL && cuttable {
            let restore = push_pointer(path, &key);
            let value = fit(value, value_budget, path, omissions);
            path.truncate(restore);
            kept.insert(key, value);
        } else {
            dropped += 1;
        }
    }
    if dropped > 0 {
        omissions.push(Omission::Keys {
            path: path.clone(),
            count: dropped,
        });
    }
    Value::Object(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_within(clamp: ResultClamp, clamped: &Clamped) {
        let text = serde_json::to_string(&clamped.value).unwrap();
        assert!(
            text.len() <= clamp.limit(),
            "{} > {}: {text}",
            text.len(),
            clamp.limit()
        );
        let _: Value = serde_json::from_str(&text).expect("still valid JSON");
    }

    #[test]
    fn small_values_pass_unchanged() {
        let value = json!({"a": [1, 2, 3]});
        let clamped = ResultClamp::new(1024).clamp(value.clone());
        assert!(!clamped.truncated);
        assert_eq!(clamped.value, value);
        assert_eq!(clamped.original_bytes, json_size(&value));
    }

    #[test]
    fn json_size_matches_serialisation() {
        let value = json!({"k\"ey": "line\nbreak \u{1} ü", "n": 1.5, "a": [null, true]});
        assert_eq!(
            json_size(&value),
            serde_json::to_string(&value).unwrap().len()
        );
    }

    #[test]
    fn long_arrays_keep_their_first_items_and_say_how_many_went() {
        let items: Vec<Value> = (0..1000)
            .map(|i| json!({"id": i, "name": format!("item {i}")}))
            .collect();
        let clamp = ResultClamp::new(2048);
        let clamped = clamp.clamp(json!({"total": 1000, "items": items}));
        assert!(clamped.truncated);
        assert_within(clamp, &clamped);
        assert_eq!(clamped.value["total"], 1000, "small fields are kept whole");
        let kept = clamped.value["items"].as_array().unwrap();
        assert!(!kept.is_empty());
        assert_eq!(kept[0]["id"], 0);
        let omitted = &clamped.value["_truncated"]["omitted"][0];
        assert_eq!(omitted["path"], "/items");
        assert_eq!(
            omitted["omittedItems"].as_u64().unwrap() as usize,
            1000 - kept.len()
        );
    }

    #[test]
    fn long_strings_are_cut_on_char_boundaries_with_a_marker() {
        let clamp = ResultClamp::new(300);
        let clamped = clamp.clamp(json!({"text": "ü\"\n".repeat(500)}));
        assert_within(clamp, &clamped);
        let text = clamped.value["text"].as_str().unwrap();
        assert!(text.ends_with(ResultClamp::STRING_MARKER));
        assert!(
            clamped.value["_truncated"]["omitted"][0]["omittedBytes"]
                .as_u64()
                .unwrap()
                > 0
        );
    }

    #[test]
    fn non_object_roots_are_wrapped() {
        let clamp = ResultClamp::new(256);
        let clamped = clamp.clamp(Value::Array((0..500).map(Value::from).collect()));
        assert_within(clamp, &clamped);
        assert!(clamped.value["content"].is_array());
        assert_eq!(clamped.value["_truncated"]["limitBytes"], 256);
    }

    #[test]
    fn deep_and_wide_values_always_fit() {
        let mut value = json!("leaf ".repeat(2000));
        for depth in 0..30 {
            value = json!({ format!("k{depth}"): value, "pad": "x".repeat(50), "list": [1, 2, 3] });
        }
        for limit in [256, 512, 1000, 4096] {
            let clamp = ResultClamp::new(limit);
            let clamped = clamp.clamp(value.clone());
            assert!(clamped.truncated);
            assert_within(clamp, &clamped);
        }
    }

    #[test]
    fn budgets_below_the_minimum_are_raised() {
        assert_eq!(ResultClamp::new(10).limit(), ResultClamp::MIN_LIMIT);
    }
}
