-- How many days after its last change a conversation is kept, when its owner chose to keep
-- it shorter than the server's retention window (NULL: the window). The partial index serves
-- the retention sweep, which looks only at conversations that have their own.
ALTER TABLE conversations ADD COLUMN retain_days INTEGER;
CREATE INDEX conversations_with_own_retention ON conversations (updated_at_ns)
    WHERE retain_days IS NOT NULL;
