-- Turn claims: the one running turn of a conversation, across every replica sharing this
-- database. A replica inserts its claim before the turn streams and renews `lease_until_ns`
-- (its heartbeat) while the turn runs; the transaction that journals the turn's terminal
-- event deletes the claim. A claim whose lease has passed belongs to a replica that died:
-- another replica takes it over and closes the turn (`conversation.failed`, `replica_lost`).
-- `attached_until_ns` is renewed by replicas whose clients follow the turn's stream, so the
-- replica running it does not cancel it for want of a client.
CREATE TABLE turn_claims (
    tenant_id         TEXT   NOT NULL,
    conversation_id   TEXT   NOT NULL,
    turn_id           TEXT   NOT NULL,
    replica_id        TEXT   NOT NULL,
    lease_until_ns    BIGINT NOT NULL,
    attached_until_ns BIGINT,
    PRIMARY KEY (tenant_id, conversation_id)
);
CREATE INDEX turn_claims_by_replica ON turn_claims (replica_id);
CREATE INDEX turn_claims_by_lease ON turn_claims (lease_until_ns);

-- The provider session a conversation's turns continue (the session handle as JSON), so
-- that its next turn, on any replica or after a restart, continues the same session.
ALTER TABLE conversations ADD COLUMN provider_session TEXT;
