-- Weaver's durable stores on PostgreSQL, shared by several server replicas. Timestamps are
-- integer nanoseconds since the Unix epoch (exact round trips; timestamptz holds microseconds).
-- JSON documents are `json`, which keeps the text as written (key order included).

-- Every index ascends: new rows land at its right edge (cheap appends), and newest-first
-- queries read it backwards.

-- Proposals: the whole proposal as JSON, plus the columns the review inbox filters on.
-- `revision` is the optimistic-concurrency counter that conditional updates compare.
CREATE TABLE proposals (
    id              TEXT   NOT NULL PRIMARY KEY,
    tenant_id       TEXT   NOT NULL,
    conversation_id TEXT,
    definition_id   TEXT   NOT NULL,
    status          TEXT   NOT NULL,
    created_by      TEXT   NOT NULL,
    created_at_ns   BIGINT NOT NULL,
    revision        BIGINT NOT NULL,
    body            JSON   NOT NULL
);
CREATE INDEX proposals_inbox ON proposals (tenant_id, created_at_ns, id);
CREATE INDEX proposals_by_status ON proposals (tenant_id, status, created_at_ns);
CREATE INDEX proposals_by_definition ON proposals (tenant_id, definition_id, created_at_ns);
CREATE INDEX proposals_by_conversation ON proposals (tenant_id, conversation_id, created_at_ns)
    WHERE conversation_id IS NOT NULL;
CREATE INDEX proposals_by_creator ON proposals (tenant_id, created_by, created_at_ns);

-- The audit trail: append-only. `seq` orders records written at the same instant.
CREATE TABLE audit_events (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              TEXT   NOT NULL UNIQUE,
    tenant_id       TEXT   NOT NULL,
    occurred_at_ns  BIGINT NOT NULL,
    actor_id        TEXT   NOT NULL,
    action          TEXT   NOT NULL,
    outcome         TEXT   NOT NULL,
    conversation_id TEXT,
    proposal_id     TEXT,
    tool_name       TEXT,
    body            JSON   NOT NULL
);
CREATE INDEX audit_events_by_time ON audit_events (tenant_id, occurred_at_ns, seq);
CREATE INDEX audit_events_by_conversation ON audit_events (tenant_id, conversation_id, occurred_at_ns)
    WHERE conversation_id IS NOT NULL;
CREATE INDEX audit_events_by_proposal ON audit_events (tenant_id, proposal_id, occurred_at_ns)
    WHERE proposal_id IS NOT NULL;
CREATE INDEX audit_events_by_actor ON audit_events (tenant_id, actor_id, occurred_at_ns);
CREATE INDEX audit_events_by_outcome ON audit_events (tenant_id, outcome, occurred_at_ns);

CREATE FUNCTION audit_events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only';
END;
$$;
CREATE TRIGGER audit_events_are_not_changed BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_are_append_only();
CREATE TRIGGER audit_events_are_not_truncated BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_are_append_only();

-- Conversations and their messages (oldest first by `seq`).
CREATE TABLE conversations (
    id            TEXT   NOT NULL PRIMARY KEY,
    tenant_id     TEXT   NOT NULL,
    owner_id      TEXT   NOT NULL,
    agent         TEXT   NOT NULL,
    title         TEXT   NOT NULL,
    created_at_ns BIGINT NOT NULL,
    updated_at_ns BIGINT NOT NULL
);
CREATE INDEX conversations_by_owner ON conversations (tenant_id, owner_id, updated_at_ns, id);
CREATE INDEX conversations_by_age ON conversations (updated_at_ns);

CREATE TABLE conversation_messages (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id TEXT   NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role            TEXT   NOT NULL,
    content         TEXT   NOT NULL,
    created_at_ns   BIGINT NOT NULL
);
CREATE INDEX conversation_messages_by_conversation ON conversation_messages (conversation_id, seq);

-- The stream journal used for reconnect: gap-free sequences per conversation.
CREATE TABLE stream_events (
    conversation_id TEXT   NOT NULL,
    sequence        BIGINT NOT NULL,
    event_type      TEXT   NOT NULL,
    occurred_at_ns  BIGINT NOT NULL,
    body            JSON   NOT NULL,
    PRIMARY KEY (conversation_id, sequence)
);

-- Tool enablement decisions; `agent_key` is '' for all agents and 'agent:<name>' for one,
-- so that a decision for all agents and one for a single agent never collide.
CREATE TABLE tool_enablements (
    tenant_id     TEXT    NOT NULL,
    tool_name     TEXT    NOT NULL,
    agent_key     TEXT    NOT NULL,
    agent         TEXT,
    enabled       BOOLEAN NOT NULL,
    changed_by    TEXT    NOT NULL,
    changed_at_ns BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, tool_name, agent_key)
);
