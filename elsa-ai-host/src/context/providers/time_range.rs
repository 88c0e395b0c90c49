//! `TimeRange` attachments.

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiContextProvider, AiContextResolutionRequest, AiError, AiResolvedContext, AttachmentKind,
};

use super::{check_range, range_json};

/// Resolves the window diagnostics tools may analyse (`timeRange` required, `from <= to`).
/// It reads no data, so it needs no permission.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimeRangeContext;

#[async_trait]
impl AiContextProvider for TimeRangeContext {
    fn kind(&self) -> AttachmentKind {
        AttachmentKind::TimeRange
    }

    async fn resolve(
        &self,
        request: AiContextResolutionRequest,
    ) -> Result<AiResolvedContext, AiError> {
        let range = request.attachment.time_range.ok_or_else(|| {
            AiError::bad_request(
                "missing_time_range",
                "TimeRange attachments need a timeRange",
            )
        })?;
        check_range(&range)?;
        Ok(AiResolvedContext {
            kind: self.kind(),
            reference_id: request.attachment.reference_id.clone(),
            title: format!(
                "Time range {} to {}",
                range.from.to_rfc3339(),
                range.to.to_rfc3339()
            ),
            content: range_json(&range),
            truncated: false,
        })
    }
}
