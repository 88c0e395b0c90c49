-- A batch of conversation writes is one statement. When one of its writes names a
-- conversation that is not (or no longer) its tenant's, the statement calls this function:
-- the error undoes the whole statement, and the writer then tries each write on its own, so
-- that only that write's caller is refused.
CREATE FUNCTION refuse_conversation_batch() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a conversation this batch writes to is not its tenant''s'
        USING ERRCODE = 'no_data_found';
END
$$;
