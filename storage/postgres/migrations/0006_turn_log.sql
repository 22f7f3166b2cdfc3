-- 0006_turn_log: the turn log's resume records (pipeline.TurnLog).
--
-- A decision on a paused turn replaces the pending row by a resume row and the resuming
-- turn's record, in one transaction; the row lives until that turn ends (FinishTurn), so a
-- crash during the resumed turn (on any replica) finds what it continues from. record is the
-- JSON of the echogate.TurnResume (the pause, the decision); the approved call's start and
-- result are columns because they are written later, as the call runs. DeleteSession removes
-- a session's rows.
CREATE TABLE resumes (
    turn            text        COLLATE "C" NOT NULL PRIMARY KEY,
    session         text        NOT NULL,
    event_key       text        NOT NULL,
    record          bytea       NOT NULL,
    tool_started_at timestamptz,
    tool_result     bytea,
    created_at      timestamptz NOT NULL
);
CREATE INDEX resumes_by_event ON resumes (event_key);
CREATE INDEX resumes_by_session ON resumes (session);

-- Stop flags: a stop for a session whose turn runs on another replica, with who sent it (the
-- replica running the turn applies the same rule as for a local stop). Every replica polls the
-- rows of the last seconds (by the database's clock); RequestStop removes rows older than a
-- few minutes.
CREATE TABLE stops (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session      text        NOT NULL,
    actor        text        NOT NULL DEFAULT '',
    requested_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stops_by_time ON stops (requested_at);
