-- Weaver's durable stores on SQLite. Timestamps are integer nanoseconds since the Unix epoch
-- (exact round trips); JSON documents are stored as the text they were serialised to.

-- Every index ascends: new rows land at its right edge (cheap appends), and newest-first
-- queries read it backwards.

-- Proposals: the whole proposal as JSON, plus the columns the review inbox filters on.
-- `revision` is the optimistic-concurrency counter that conditional updates compare.
CREATE TABLE proposals (
    id              TEXT    NOT NULL PRIMARY KEY,
    tenant_id       TEXT    NOT NULL,
    conversation_id TEXT,
    definition_id   TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    created_by      TEXT    NOT NULL,
    created_at_ns   INTEGER NOT NULL,
    revision        INTEGER NOT NULL,
    body            TEXT    NOT NULL
);
CREATE INDEX proposals_inbox ON proposals (tenant_id, created_at_ns, id);
CREATE INDEX proposals_by_status ON proposals (tenant_id, status, created_at_ns);
CREATE INDEX proposals_by_definition ON proposals (tenant_id, definition_id, created_at_ns);
CREATE INDEX proposals_by_conversation ON proposals (tenant_id, conversation_id, created_at_ns)
    WHERE conversation_id IS NOT NULL;
CREATE INDEX proposals_by_creator ON proposals (tenant_id, created_by, created_at_ns);

-- The audit trail: append-only. `seq` orders records written at the same instant.
CREATE TABLE audit_events (
    seq             INTEGER NOT NULL PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    tenant_id       TEXT    NOT NULL,
    occurred_at_ns  INTEGER NOT NULL,
    actor_id        TEXT    NOT NULL,
    action          TEXT    NOT NULL,
    outcome         TEXT    NOT NULL,
    conversation_id TEXT,
    proposal_id     TEXT,
    tool_name       TEXT,
    body            TEXT    NOT NULL
);
CREATE INDEX audit_events_by_time ON audit_events (tenant_id, occurred_at_ns, seq);
CREATE INDEX audit_events_by_conversation ON audit_events (tenant_id, conversation_id, occurred_at_ns)
    WHERE conversation_id IS NOT NULL;
CREATE INDEX audit_events_by_proposal ON audit_events (tenant_id, proposal_id, occurred_at_ns)
    WHERE proposal_id IS NOT NULL;
CREATE INDEX audit_events_by_actor ON audit_events (tenant_id, actor_id, occurred_at_ns);
CREATE INDEX audit_events_by_outcome ON audit_events (tenant_id, outcome, occurred_at_ns);

CREATE TRIGGER audit_events_are_not_updated BEFORE UPDATE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit events are append-only');
END;
CREATE TRIGGER audit_events_are_not_deleted BEFORE DELETE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit events are append-only');
END;

-- Conversations and their messages (oldest first by `seq`).
CREATE TABLE conversations (
    id            TEXT    NOT NULL PRIMARY KEY,
    tenant_id     TEXT    NOT NULL,
    owner_id      TEXT    NOT NULL,
    agent         TEXT    NOT NULL,
    title         TEXT    NOT NULL,
    created_at_ns INTEGER NOT NULL,
    updated_at_ns INTEGER NOT NULL
);
CREATE INDEX conversations_by_owner ON conversations (tenant_id, owner_id, updated_at_ns, id);
CREATE INDEX conversations_by_age ON conversations (updated_at_ns);

CREATE TABLE conversation_messages (
    seq             INTEGER NOT NULL PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role            TEXT    NOT NULL,
    content         TEXT    NOT NULL,
    created_at_ns   INTEGER NOT NULL
);
CREATE INDEX conversation_messages_by_conversation ON conversation_messages (conversation_id, seq);

-- The stream journal used for reconnect: gap-free sequences per conversation.
CREATE TABLE stream_events (
    conversation_id TEXT    NOT NULL,
    sequence        INTEGER NOT NULL,
    event_type      TEXT    NOT NULL,
    occurred_at_ns  INTEGER NOT NULL,
    body            TEXT    NOT NULL,
    PRIMARY KEY (conversation_id, sequence)
) WITHOUT ROWID;

-- Tool enablement decisions; `agent_key` is '' for all agents and 'agent:<name>' for one,
-- so that a decision for all agents and one for a single agent never collide.
CREATE TABLE tool_enablements (
    tenant_id     TEXT    NOT NULL,
    tool_name     TEXT    NOT NULL,
    agent_key     TEXT    NOT NULL,
    agent         TEXT,
    enabled       INTEGER NOT NULL,
    changed_by    TEXT    NOT NULL,
    changed_at_ns INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, tool_name, agent_key)
);
