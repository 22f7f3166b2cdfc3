-- 0003_checkpoints: conversation checkpoints written by context compression (agent/compress).
--
-- A checkpoint summarizes a session's transcript up to covers_seq; later turns start from the
-- newest one plus the messages after it. body is the JSON of the checkpoint's echogate.Message.
-- The newest few per session are kept (SaveCheckpoint prunes older ones).
CREATE TABLE checkpoints (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session    TEXT    NOT NULL,
    covers_seq INTEGER NOT NULL,
    turn       TEXT    NOT NULL DEFAULT '',
    body       TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX checkpoints_by_session ON checkpoints (session, id DESC);

-- A deleted session takes its checkpoints along (DeleteSession removes the sessions row), so a
-- session started again under the same key never resumes from the old conversation's summary.
CREATE TRIGGER checkpoints_follow_sessions AFTER DELETE ON sessions
BEGIN
    DELETE FROM checkpoints WHERE session = OLD.key;
END;
