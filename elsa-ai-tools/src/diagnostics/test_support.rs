//! What the unit tests of the scope-reading modules share: instants of one test day and
//! `TimeRange` attachments between them.

use chrono::{DateTime, TimeZone, Utc};
use elsa_ai_abstractions::{AiContextAttachment, AttachmentKind};
use elsa_workflows::TimeRange;

/// `hour` o'clock on the test day (UTC).
pub(crate) fn at(hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 4, 18, hour, 0, 0).unwrap()
}

/// A `TimeRange` attachment from `from` to `to` o'clock on the test day.
pub(crate) fn range(from: u32, to: u32) -> AiContextAttachment {
    AiContextAttachment {
        time_range: Some(TimeRange {
            from: at(from),
            to: at(to),
        }),
        ..AiContextAttachment::new(AttachmentKind::TimeRange, "window")
    }
}
