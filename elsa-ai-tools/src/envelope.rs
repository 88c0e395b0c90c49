//! The one shape of every grounding result (SPEC §9): a `summary` line a model can quote, the
//! answer itself (a list's `total` / `returned` / `truncated` / `nextOffset` / `items`, or a
//! single object's fields), `warnings` when there are any, and `evidence`, the references to
//! the records the answer was read from.
//!
//! ```json
//! {"summary": "2 of 14 workflow definitions match 'order'.",
//!  "total": 14, "returned": 2, "truncated": true, "nextOffset": 2, "items": [{…}, {…}],
//!  "evidence": ["definition:orders@3", "definition:order-export@1"]}
//! ```
//!
//! Results stay within [`GroundingLimits`]: a list holds at most `max_items` items and drops
//! whole items from its end until the result fits `max_result_bytes`, saying so through
//! `truncated` and `nextOffset`, so a model can page instead of reading a cut document.

use std::io;

use elsa_ai_abstractions::{AiError, GroundingLimits};
use serde::Serialize;
use serde_json::Value;

use crate::support::{Listing, to_json};

/// A reference to a record an answer was read from: `kind:id`, with `@version` for a
/// versioned record (`definition:orders@3`, `instance:8f2c…`, `descriptor:Elsa.If@1`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(crate) struct Evidence(String);

impl Evidence {
    /// A version of a workflow definition.
    pub fn definition(definition_id: &str, version: i32) -> Self {
        Self(format!("definition:{definition_id}@{version}"))
    }

    /// A workflow instance.
    pub fn instance(instance_id: &str) -> Self {
        Self(format!("instance:{instance_id}"))
    }

    /// What Elsa recorded while running an instance (activity executions, execution log).
    pub fn executions(instance_id: &str) -> Self {
        Self(format!("executions:{instance_id}"))
    }

    /// An activity descriptor of the tenant's catalog.
    pub fn descriptor(type_name: &str, version: Option<i32>) -> Self {
        match version {
            Some(version) => Self(format!("descriptor:{type_name}@{version}")),
            None => Self(format!("descriptor:{type_name}")),
        }
    }

    /// An incident, by its instance and the activity it was recorded for.
    pub fn incident(instance_id: &str, activity_id: Option<&str>) -> Self {
        Self(format!(
            "incident:{instance_id}/{}",
            activity_id.unwrap_or("?")
        ))
    }

    /// A proposal.
    #[allow(
        dead_code,
        reason = "for the proposal tools, which do not return the envelope yet"
    )]
    pub fn proposal(id: &str) -> Self {
        Self(format!("proposal:{id}"))
    }

    /// The evidence as text.
    #[cfg(test)]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The envelope around a result body `B` (a single object's fields, or a list).
#[derive(Serialize)]
struct Envelope<'a, B> {
    summary: &'a str,
    #[serde(flatten)]
    body: B,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
    evidence: &'a [Evidence],
}

/// A single object's result: `summary`, the object's fields, `warnings`, `evidence`. The
/// object must serialise to a JSON object; it is bounded by its own limits.
pub(crate) fn object<B: Serialize>(
    summary: &str,
    body: B,
    warnings: &[String],
    evidence: &[Evidence],
) -> Result<Value, AiError> {
    to_json(&Envelope {
        summary,
        body,
        warnings,
        evidence,
    })
}

/// A list's result, built by [`GroundedList::finish`].
pub(crate) struct GroundedList<T, X = ()> {
    listing: Listing<T>,
    /// Where the listing starts among all matches (for `nextOffset` after dropping items);
    /// `None` for a list the tool cannot page through.
    offset: Option<usize>,
    /// Fields of the answer besides the list (counts per category, whether a scan was
    /// complete), written before it.
    extra: X,
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct ListBody<'a, T, X> {
    #[serde(flatten)]
    extra: &'a X,
    #[serde(flatten)]
    listing: &'a Listing<T>,
}

impl<T: Serialize> GroundedList<T> {
    /// A page starting at `offset` among all matches.
    pub fn new(listing: Listing<T>, offset: usize) -> Self {
        Self {
            listing,
            offset: Some(offset),
            extra: (),
            warnings: Vec::new(),
        }
    }

    /// A list the tool cannot page through (its first items): what it cuts is only counted.
    pub fn unpaged(listing: Listing<T>) -> Self {
        Self {
            offset: None,
            ..Self::new(listing, 0)
        }
    }
}

impl<T: Serialize, X: Serialize> GroundedList<T, X> {
    /// Writes `extra`'s fields beside the list.
    pub fn with_extra<Y: Serialize>(self, extra: Y) -> GroundedList<T, Y> {
        GroundedList {
            listing: self.listing,
            offset: self.offset,
            extra,
            warnings: self.warnings,
        }
    }

    /// Adds warnings.
    pub fn with_warnings(mut self, warnings: impl IntoIterator<Item = String>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// The result within `limits`: at most `max_items` items, then items dropped from the end
    /// until it fits `max_result_bytes` (never below one item: the governor's clamp still
    /// bounds that one). `summary` is written from the final list; each item's evidence comes
    /// from `evidence`.
    pub fn finish(
        mut self,
        limits: &GroundingLimits,
        summary: impl Fn(&Listing<T>) -> String,
        evidence: impl Fn(&T) -> Evidence,
    ) -> Result<Value, AiError> {
        let max_items = limits.max_items.max(1);
        if self.listing.items.len() > max_items {
            self.cut_to(max_items);
        }
        let mut evidence: Vec<Evidence> = self.listing.items.iter().map(&evidence).collect();
        let sizes: Vec<usize> = self
            .listing
            .items
            .iter()
            .zip(&evidence)
            .map(|(item, evidence)| size_of(item) + size_of(evidence) + 2)
            .collect();
        // A first estimate, then the exact size: the summary and the paging fields change
        // with what is cut.
        let mut size = size_of(&self.envelope("", &evidence));
        let mut kept = self.listing.items.len();
        loop {
            while size > limits.max_result_bytes && kept > 1 {
                kept -= 1;
                size -= sizes[kept];
            }
            if kept < self.listing.items.len() {
                self.cut_to(kept);
                evidence.truncate(kept);
            }
            let text = summary(&self.listing);
            size = size_of(&self.envelope(&text, &evidence));
            if size <= limits.max_result_bytes || kept <= 1 {
                return to_json(&self.envelope(&text, &evidence));
            }
        }
    }

    fn envelope<'a>(
        &'a self,
        summary: &'a str,
        evidence: &'a [Evidence],
    ) -> Envelope<'a, ListBody<'a, T, X>> {
        Envelope {
            summary,
            body: ListBody {
                extra: &self.extra,
                listing: &self.listing,
            },
            warnings: &self.warnings,
            evidence,
        }
    }

    fn cut_to(&mut self, kept: usize) {
        self.listing.items.truncate(kept);
        self.listing.returned = kept;
        self.listing.truncated = true;
        self.listing.next_offset = self.offset.map(|offset| offset + kept);
    }
}

/// The size of `value` as compact JSON, in bytes, without keeping the text.
pub(crate) fn size_of<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Counter(usize);
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing to a counter cannot fail; a value that cannot be serialised counts as empty.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// "1 workflow definition" / "3 workflow definitions".
pub(crate) fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// Which of the matches a list shows, for a summary: "all 3", "the first 25 of 40",
/// "items 26–40 of 40", "none of 40".
pub(crate) fn shown<T>(listing: &Listing<T>, offset: usize) -> String {
    if listing.total == 0 {
        return "none".to_owned();
    }
    if listing.returned == listing.total {
        return format!("all {}", listing.total);
    }
    if listing.returned == 0 {
        return format!("none of {}", listing.total);
    }
    if offset == 0 {
        return format!("the first {} of {}", listing.returned, listing.total);
    }
    format!(
        "items {}–{} of {}",
        offset + 1,
        offset + listing.returned,
        listing.total
    )
}

#[cfg(test)]
mod tests {
    use elsa_workflows::PageRequest;
    use serde_json::json;

    use super::*;

    fn listing(n: usize, offset: usize, limit: usize) -> Listing<Value> {
        let all: Vec<Value> = (0..n)
            .map(|i| json!({"id": format!("item-{i}"), "text": "x".repeat(100)}))
            .collect();
        Listing::from_page(PageRequest::new(offset, limit).slice(all))
    }

    fn evidence(item: &Value) -> Evidence {
        Evidence::instance(item["id"].as_str().unwrap())
    }

    #[test]
    fn a_list_has_summary_paging_items_and_one_evidence_per_item() {
        let limits = GroundingLimits::default();
        let result = GroundedList::new(listing(3, 0, 10), 0)
            .finish(&limits, |l| format!("{} found", shown(l, 0)), evidence)
            .unwrap();
        assert_eq!(result["summary"], "all 3 found");
        assert_eq!(
            (result["total"].as_u64(), result["returned"].as_u64()),
            (Some(3), Some(3))
        );
        assert_eq!(result["truncated"], false);
        assert!(result.get("nextOffset").is_none());
        assert!(result.get("warnings").is_none(), "no warnings, no field");
        assert_eq!(
            result["evidence"],
            json!(["instance:item-0", "instance:item-1", "instance:item-2"])
        );
        let keys: Vec<&str> = result
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "summary",
                "total",
                "returned",
                "truncated",
                "items",
                "evidence"
            ]
        );
    }

    #[test]
    fn max_items_cuts_the_list_and_points_at_the_next_page() {
        let limits = GroundingLimits {
            max_items: 2,
            ..GroundingLimits::default()
        };
        let result = GroundedList::new(listing(10, 4, 5), 4)
            .finish(&limits, |l| shown(l, 4), evidence)
            .unwrap();
        assert_eq!(result["returned"], 2);
        assert_eq!(result["truncated"], true);
        assert_eq!(result["nextOffset"], 6);
        assert_eq!(result["summary"], "items 5–6 of 10");
        assert_eq!(result["evidence"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn an_oversized_list_drops_whole_items_until_it_fits() {
        let limits = GroundingLimits {
            max_items: 50,
            max_result_bytes: 1_000,
        };
        let result = GroundedList::new(listing(20, 0, 20), 0)
            .with_extra(json!({"scanned": 20}))
            .with_warnings(["one warning".to_owned()])
            .finish(&limits, |l| shown(l, 0), evidence)
            .unwrap();
        let size = serde_json::to_vec(&result).unwrap().len();
        assert!(size <= 1_000, "{size} bytes");
        let returned = result["returned"].as_u64().unwrap() as usize;
        assert!((1..20).contains(&returned), "{returned}");
        assert_eq!(result["items"].as_array().unwrap().len(), returned);
        assert_eq!(result["nextOffset"], returned);
        assert_eq!(result["scanned"], 20);
        assert_eq!(result["warnings"], json!(["one warning"]));
        // One item too large for the budget alone is still returned: the clamp bounds it.
        let tiny = GroundingLimits {
            max_items: 50,
            max_result_bytes: 10,
        };
        let result = GroundedList::new(listing(3, 0, 3), 0)
            .finish(&tiny, |l| shown(l, 0), evidence)
            .unwrap();
        assert_eq!(result["returned"], 1);
        let result = GroundedList::unpaged(listing(5, 0, 5))
            .finish(&tiny, |l| shown(l, 0), evidence)
            .unwrap();
        assert_eq!(result["truncated"], true);
        assert!(result.get("nextOffset").is_none(), "nothing to page to");
    }

    #[test]
    fn an_object_keeps_its_fields_between_summary_and_evidence() {
        let result = object(
            "Workflow 'orders' version 3.",
            json!({"definitionId": "orders", "version": 3}),
            &[],
            &[Evidence::definition("orders", 3)],
        )
        .unwrap();
        assert_eq!(
            result,
            json!({"summary": "Workflow 'orders' version 3.", "definitionId": "orders",
                   "version": 3, "evidence": ["definition:orders@3"]})
        );
        assert_eq!(
            Evidence::descriptor("Elsa.If", Some(1)).as_str(),
            "descriptor:Elsa.If@1"
        );
        assert_eq!(Evidence::incident("i", None).as_str(), "incident:i/?");
        assert_eq!(count(1, "run", "runs"), "1 run");
        assert_eq!(count(2, "run", "runs"), "2 runs");
    }
}
