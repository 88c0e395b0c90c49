-- A cancel asked of a replica that does not run the turn: it marks the claim (when), and
-- the replica running the turn cancels it when it hears of the mark (at once through
-- `pg_notify('weaver_cancel', ..)`, at its next heartbeat at the latest).
ALTER TABLE turn_claims ADD COLUMN cancel_requested_ns BIGINT;
