-- 0005_turn_log: the turn log's resume records (pipeline.TurnLog).
--
-- A decision on a paused turn replaces the pending row by a resume row and the resuming
-- turn's record, in one transaction; the row lives until that turn ends (FinishTurn), so a
-- crash during the resumed turn finds what it continues from. record is the JSON of the
-- echogate.TurnResume (the pause, the decision); the approved call's start and result are
-- columns because they are written later, as the call runs.
CREATE TABLE resumes (
    turn            TEXT    NOT NULL PRIMARY KEY,
    session         TEXT    NOT NULL,
    event_key       TEXT    NOT NULL,
    record          BLOB    NOT NULL,
    tool_started_at INTEGER,
    tool_result     BLOB,
    created_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX resumes_by_event ON resumes (event_key);
CREATE INDEX resumes_by_session ON resumes (session);

CREATE TRIGGER resumes_follow_sessions AFTER DELETE ON sessions
BEGIN
    DELETE FROM resumes WHERE session = OLD.key;
END;
