-- 0004_checkpoints: conversation checkpoints written by context compression (agent/compress).
--
-- A checkpoint summarizes a session's transcript up to covers_seq; later turns start from the
-- newest one plus the messages after it. body is the JSON of the checkpoint's echogate.Message
-- (json, not jsonb, like messages.body). The newest few per session are kept (SaveCheckpoint
-- prunes older ones).
CREATE TABLE checkpoints (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session    text        NOT NULL,
    covers_seq bigint      NOT NULL,
    turn       text        NOT NULL DEFAULT '',
    body       json        NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX checkpoints_by_session ON checkpoints (session, id DESC);

-- A deleted session takes its checkpoints along (DeleteSession removes the sessions row), so a
-- session started again under the same key never resumes from the old conversation's summary.
-- search_path is pinned to the migration's, so the trigger finds this schema's table.
CREATE FUNCTION echogate_delete_session_checkpoints() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM checkpoints WHERE session = OLD.key;
    RETURN NULL;
END;
$$;
CREATE TRIGGER checkpoints_follow_sessions AFTER DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION echogate_delete_session_checkpoints();
