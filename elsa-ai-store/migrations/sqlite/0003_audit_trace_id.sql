-- Audit records name the trace they were made in (the W3C trace id of the chat turn, or of
-- whatever traced operation audited them), so that a trace seen in a tracing backend leads
-- to its audit records and back. The id is also in the record's body; the column is what
-- a query by trace reads.
--
-- Records written before this migration were made outside any trace the store knew of and
-- keep no trace id.
ALTER TABLE audit_events ADD COLUMN trace_id TEXT;

CREATE INDEX audit_events_by_trace ON audit_events (tenant_id, trace_id)
    WHERE trace_id IS NOT NULL;
