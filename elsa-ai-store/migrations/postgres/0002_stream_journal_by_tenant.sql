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
-- The migration runs in one transaction under the migrator's advisory lock; replicas still
-- running the previous version cannot append (they name no tenant) once it has committed.
ALTER TABLE stream_events ADD COLUMN tenant_id TEXT;

UPDATE stream_events SET tenant_id = conversations.tenant_id
FROM conversations WHERE conversations.id = stream_events.conversation_id;

DELETE FROM stream_events WHERE tenant_id IS NULL;

ALTER TABLE stream_events ALTER COLUMN tenant_id SET NOT NULL;
ALTER TABLE stream_events DROP CONSTRAINT stream_events_pkey;
ALTER TABLE stream_events ADD PRIMARY KEY (tenant_id, conversation_id, sequence);
