-- A cancel asked while the turn's claim is held (by this process or, after a restart, by its
-- predecessor): it marks the claim (when), and the heartbeat of the process holding it
-- cancels the turn.
ALTER TABLE turn_claims ADD COLUMN cancel_requested_ns INTEGER;
