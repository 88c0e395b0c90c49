-- The stream journal is keyed by (tenant, conversation, sequence): the same conversation id
-- under another tenant is another journal, so a read or an append under the wrong tenant
-- reaches nothing, whatever the layers above check (isolation in depth).
--
-- Existing rows take the tenant of their conversation (conversation ids are unique across
-- tenants, so there is exactly one). Rows whose conversation is not in `conversations` are
-- dropped rather than given a tenant no caller can have: nobody could reach them before
-- (resuming and publishing both go through the conversation in the caller's tenant), and
-- retention finds journals through their conversations, so kept they would outlive every
-- retention window.
--
-- SQLite cannot change a primary key in place: the table is rebuilt under its old name.
CREATE TABLE stream_events_by_tenant (
    tenant_id       TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    sequence        INTEGER NOT NULL,
    event_type      TEXT    NOT NULL,
    occurred_at_ns  INTEGER NOT NULL,
    body            TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, conversation_id, sequence)
) WITHOUT ROWID;

INSERT INTO stream_events_by_tenant
    (tenant_id, conversation_id, sequence, event_type, occurred_at_ns, body)
SELECT conversations.tenant_id, stream_events.conversation_id, stream_events.sequence,
       stream_events.event_type, stream_events.occurred_at_ns, stream_events.body
FROM stream_events JOIN conversations ON conversations.id = stream_events.conversation_id;

DROP TABLE stream_events;
ALTER TABLE stream_events_by_tenant RENAME TO stream_events;
