//! `instance.detectTrends`: recurring failures over time buckets inside the attached scope.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::TimeRange;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::aggregate::scan_warning;
use super::failures::Failure;
use super::scope::{Scope, ScopeEcho, ScopeNarrowing};
use crate::envelope::{Evidence, count, object};
use crate::names;
use crate::support::{DEFAULT_LIMIT, Listing, MAX_LIMIT, built_in, input};

/// The most buckets one analysis uses; a finer bucket size is coarsened to fit.
const MAX_BUCKETS: i64 = 96;

/// The width of a time bucket.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum BucketSize {
    /// One hour.
    Hour,
    /// Six hours.
    #[serde(rename = "6h")]
    SixHours,
    /// One day.
    Day,
    /// One week.
    Week,
}

impl BucketSize {
    const ALL: [Self; 4] = [Self::Hour, Self::SixHours, Self::Day, Self::Week];

    /// The width in words, for a summary.
    fn label(self) -> &'static str {
        match self {
            Self::Hour => "an hour",
            Self::SixHours => "six hours",
            Self::Day => "a day",
            Self::Week => "a week",
        }
    }

    fn duration(self) -> Duration {
        match self {
            Self::Hour => Duration::hours(1),
            Self::SixHours => Duration::hours(6),
            Self::Day => Duration::days(1),
            Self::Week => Duration::weeks(1),
        }
    }

    /// The requested size (or the finest one) coarsened until the range fits in
    /// [`MAX_BUCKETS`] buckets.
    fn fitting(requested: Option<Self>, range: &TimeRange) -> Self {
        let span = range.to - range.from;
        Self::ALL
            .into_iter()
            .filter(|size| requested.is_none_or(|r| *size >= r))
            .find(|size| buckets_needed(span, size.duration()) <= MAX_BUCKETS)
            .unwrap_or(Self::Week)
    }
}

fn buckets_needed(span: Duration, width: Duration) -> i64 {
    span.num_seconds() / width.num_seconds().max(1) + 1
}

/// Arguments of `instance.detectTrends`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DetectTrendsInput {
    /// Only these definitions; each must be in the attached diagnostics scope.
    #[serde(default)]
    #[schemars(length(min = 1, max = 50))]
    pub definition_ids: Option<Vec<String>>,
    /// Start of a window inside the attached time range (RFC 3339).
    #[serde(default)]
    pub from: Option<DateTime<Utc>>,
    /// End of a window inside the attached time range (RFC 3339).
    #[serde(default)]
    pub to: Option<DateTime<Utc>>,
    /// Bucket width: "hour", "6h", "day" or "week" (default: the finest that gives at most
    /// 96 buckets; a finer request is coarsened the same way).
    #[serde(default)]
    pub bucket: Option<BucketSize>,
    /// How many failure signatures to return, most frequent first, 1 to 50 (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
}

/// Whether a signature's failures grow, shrink or hold over the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Direction {
    Rising,
    Falling,
    Steady,
}

/// Compares the later half of the buckets with the earlier half: a change of at least half
/// and at least two failures is a trend.
fn direction(counts: &[usize]) -> Direction {
    let half = counts.len() / 2;
    let earlier: usize = counts[..half].iter().sum();
    let later: usize = counts[counts.len() - half..].iter().sum();
    if later >= earlier + 2 && later * 2 >= earlier * 3 {
        Direction::Rising
    } else if earlier >= later + 2 && earlier * 2 >= later * 3 {
        Direction::Falling
    } else {
        Direction::Steady
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Bucket {
    start: DateTime<Utc>,
    failures: usize,
}

/// One failure signature over time.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Signature {
    #[serde(skip_serializing_if = "Option::is_none")]
    definition_id: Option<String>,
    activity_type: String,
    error_category: String,
    total: usize,
    /// In how many buckets it occurred.
    buckets_with_failures: usize,
    /// Whether it occurred in more than one bucket.
    recurring: bool,
    trend: Direction,
    first_seen: DateTime<Utc>,
    last_seen: DateTime<Utc>,
    /// Failures per bucket, aligned with `buckets`.
    counts: Vec<usize>,
    /// The signature's newest failure, as evidence: its instance and activity.
    #[serde(skip)]
    newest: (String, Option<String>),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Trends {
    scope: ScopeEcho,
    bucket: BucketSize,
    buckets: Vec<Bucket>,
    total_failures: usize,
    recurring_signatures: usize,
    signatures: Listing<Signature>,
}

fn analyse(
    failures: &[Failure],
    range: &TimeRange,
    size: BucketSize,
    limit: usize,
) -> (Vec<Bucket>, Listing<Signature>, usize) {
    let width = size.duration();
    let count = usize::try_from(buckets_needed(range.to - range.from, width)).unwrap_or(1);
    let index = |t: DateTime<Utc>| {
        usize::try_from((t - range.from).num_seconds() / width.num_seconds())
            .unwrap_or(0)
            .min(count - 1)
    };
    let mut totals = vec![0; count];
    let mut by_signature: BTreeMap<(Option<String>, String, String), Vec<&Failure>> =
        BTreeMap::new();
    for failure in failures {
        let Some(at) = failure.timestamp else {
            continue;
        };
        totals[index(at)] += 1;
        by_signature
            .entry((
                failure.definition_id.clone(),
                failure.activity_type.clone(),
                failure.category.clone(),
            ))
            .or_default()
            .push(failure);
    }
    let mut signatures: Vec<Signature> = by_signature
        .into_iter()
        .map(
            |((definition_id, activity_type, error_category), members)| {
                let times: Vec<DateTime<Utc>> =
                    members.iter().filter_map(|f| f.timestamp).collect();
                let newest = members
                    .iter()
                    .max_by_key(|f| f.timestamp)
                    .map(|f| (f.instance_id.clone(), f.activity_id.clone()))
                    .unwrap_or_default();
                let mut counts = vec![0; count];
                for t in &times {
                    counts[index(*t)] += 1;
                }
                let buckets_with_failures = counts.iter().filter(|c| **c > 0).count();
                Signature {
                    definition_id,
                    activity_type,
                    error_category,
                    total: times.len(),
                    buckets_with_failures,
                    recurring: buckets_with_failures > 1,
                    trend: direction(&counts),
                    first_seen: times.iter().copied().min().unwrap_or(range.from),
                    last_seen: times.iter().copied().max().unwrap_or(range.to),
                    counts,
                    newest,
                }
            },
        )
        .collect();
    signatures.sort_by_key(|s| std::cmp::Reverse((s.recurring, s.total)));
    let recurring = signatures.iter().filter(|s| s.recurring).count();
    let buckets = totals
        .into_iter()
        .enumerate()
        .map(|(i, failures)| Bucket {
            start: range.from + width * i32::try_from(i).unwrap_or(i32::MAX),
            failures,
        })
        .collect();
    (buckets, Listing::first(signatures, limit), recurring)
}

/// `instance.detectTrends` (`instances.detectTrends`): failure signatures (workflow, activity
/// type, error category) counted per time bucket, marked recurring and rising/falling/steady,
/// only inside the attached diagnostics scope and time range. Needs
/// `read:workflow-instances`.
pub struct DetectTrends {
    definition: AiToolDefinition,
}

impl Default for DetectTrends {
    fn default() -> Self {
        Self {
            definition: built_in::<DetectTrendsInput>(
                names::DETECT_TRENDS,
                "Detect failure trends",
                "Finds recurring failures over time: counts failures per time bucket within the \
                 attached time range and lists failure signatures (definition, activity type, \
                 error category) as recurring, rising, falling or steady. Reads only the \
                 attached diagnostics scope and time range and refuses without both.",
                ToolMutability::ReadOnly,
                DangerLevel::Medium,
                &[Permission::READ_WORKFLOW_INSTANCES],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::DETECT_TRENDS),
        }
    }
}

#[async_trait]
impl AiTool for DetectTrends {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: DetectTrendsInput = input(&context)?;
        let scope = Scope::resolve(
            &context.attachments,
            &ScopeNarrowing {
                definition_ids: args.definition_ids,
                from: args.from,
                to: args.to,
            },
        )?;
        let scanned = scope.scan(&context).await?;
        let size = BucketSize::fitting(args.bucket, &scope.range);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let (buckets, signatures, recurring) =
            analyse(&scanned.failures, &scope.range, size, limit);
        let rising = signatures
            .items
            .iter()
            .filter(|s| s.trend == Direction::Rising)
            .count();
        let summary = format!(
            "{} in {} buckets of {}: {}, {} recurring, {} rising.",
            count(scanned.failures.len(), "failure", "failures"),
            buckets.len(),
            size.label(),
            count(signatures.total, "signature", "signatures"),
            recurring,
            rising
        );
        let warnings = scan_warning(&scanned.echo);
        let evidence: Vec<Evidence> = signatures
            .items
            .iter()
            .map(|s| Evidence::incident(&s.newest.0, s.newest.1.as_deref()))
            .collect();
        object(
            &summary,
            Trends {
                scope: scanned.echo,
                bucket: size,
                buckets,
                total_failures: scanned.failures.len(),
                recurring_signatures: recurring,
                signatures,
            },
            &warnings,
            &evidence,
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(DetectTrends::default())) }

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(day: u32, hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 4, day, hour, 0, 0).unwrap()
    }

    fn failure(instance: &str, category: &str, timestamp: DateTime<Utc>) -> Failure {
        Failure {
            instance_id: instance.into(),
            definition_id: Some("d".into()),
            activity_id: Some("a".into()),
            activity_type: "Elsa.SendHttpRequest".into(),
            category: category.into(),
            message: None,
            timestamp: Some(timestamp),
            evidence: "$.incidents[0]".into(),
        }
    }

    #[test]
    fn bucket_sizes_coarsen_to_fit() {
        let day = TimeRange {
            from: at(1, 0),
            to: at(2, 0),
        };
        assert_eq!(BucketSize::fitting(None, &day), BucketSize::Hour);
        assert_eq!(
            BucketSize::fitting(Some(BucketSize::Day), &day),
            BucketSize::Day
        );
        let ten_days = TimeRange {
            from: at(1, 0),
            to: at(11, 0),
        };
        assert_eq!(BucketSize::fitting(None, &ten_days), BucketSize::SixHours);
        assert_eq!(
            BucketSize::fitting(Some(BucketSize::Hour), &ten_days),
            BucketSize::SixHours
        );
        let month = TimeRange {
            from: at(1, 0),
            to: at(30, 0),
        };
        assert_eq!(BucketSize::fitting(None, &month), BucketSize::Day);
    }

    #[test]
    fn recurring_rising_signatures_come_first() {
        let range = TimeRange {
            from: at(1, 0),
            to: at(4, 23),
        };
        let failures = vec![
            failure("i1", "System.TimeoutException", at(1, 3)),
            failure("i2", "System.TimeoutException", at(3, 3)),
            failure("i3", "System.TimeoutException", at(4, 3)),
            failure("i4", "System.TimeoutException", at(4, 5)),
            failure("i5", "System.TimeoutException", at(4, 9)),
            failure("i6", "System.NullReferenceException", at(2, 1)),
        ];
        let (buckets, signatures, recurring) = analyse(&failures, &range, BucketSize::Day, 10);
        assert_eq!(buckets.len(), 4);
        assert_eq!(
            buckets.iter().map(|b| b.failures).collect::<Vec<_>>(),
            [1, 1, 1, 3]
        );
        assert_eq!(recurring, 1);
        let first = &signatures.items[0];
        assert_eq!(first.error_category, "System.TimeoutException");
        assert_eq!(first.counts, [1, 0, 1, 3]);
        assert!(first.recurring);
        assert_eq!(first.trend, Direction::Rising);
        assert!(!signatures.items[1].recurring);
    }

    #[test]
    fn directions_need_a_real_change() {
        assert_eq!(direction(&[1, 1, 1, 1]), Direction::Steady);
        assert_eq!(direction(&[0, 0, 2, 3]), Direction::Rising);
        assert_eq!(direction(&[3, 2, 0, 0]), Direction::Falling);
        assert_eq!(direction(&[0, 1]), Direction::Steady);
        assert_eq!(direction(&[5]), Direction::Steady);
    }
}
