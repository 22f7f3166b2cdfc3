-- 0001_init: the pipeline's tables.
--
-- Conventions (mirrored by storage/postgres):
--   * every *_at column holds UTC time as INTEGER microseconds since the Unix epoch
--     (PostgreSQL: timestamptz, also microsecond precision); NULL means "not set";
--   * booleans are INTEGER 0/1;
--   * session keys, ids and names are TEXT, never NULL (empty string when absent).
-- Tables are STRICT so a wrongly typed value is an error instead of a silent conversion.

-- sessions: one row per conversation the gateway has seen.
CREATE TABLE sessions (
    key        TEXT    NOT NULL PRIMARY KEY,
    platform   TEXT    NOT NULL DEFAULT '',
    workspace  TEXT    NOT NULL DEFAULT '',
    channel    TEXT    NOT NULL DEFAULT '',
    thread     TEXT    NOT NULL DEFAULT '',
    dm         INTEGER NOT NULL DEFAULT 0,
    user_id    TEXT    NOT NULL DEFAULT '',
    ephemeral  INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_by_updated ON sessions (updated_at DESC, key DESC);

-- messages: the transcript; body is the JSON of echogate.Message.
-- No foreign key to sessions: the transcript is written on the hot path and DeleteSession removes
-- it explicitly in the same transaction.
CREATE TABLE messages (
    session TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    turn    TEXT    NOT NULL DEFAULT '',
    role    TEXT    NOT NULL DEFAULT '',
    body    TEXT    NOT NULL,
    at      INTEGER NOT NULL,
    PRIMARY KEY (session, seq)
) STRICT, WITHOUT ROWID;

-- events: the dispatcher's dedupe record. payload is the JSON of the InboundEvent.
CREATE TABLE events (
    key          TEXT    NOT NULL PRIMARY KEY,
    payload      BLOB    NOT NULL DEFAULT x'',
    claimed_at   INTEGER NOT NULL,
    completed_at INTEGER
) STRICT;
CREATE INDEX events_unfinished ON events (claimed_at, key) WHERE completed_at IS NULL;
CREATE INDEX events_by_completed ON events (completed_at) WHERE completed_at IS NOT NULL;

-- turns: one row per turn. Kept when the session is deleted (they index the money spent).
CREATE TABLE turns (
    id            TEXT    NOT NULL PRIMARY KEY,
    session       TEXT    NOT NULL,
    event_key     TEXT    NOT NULL DEFAULT '',
    user_id       TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL DEFAULT '',
    model         TEXT    NOT NULL DEFAULT '',
    route_reason  TEXT    NOT NULL DEFAULT '',
    error         TEXT    NOT NULL DEFAULT '',
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL    NOT NULL DEFAULT 0,
    started_at    INTEGER NOT NULL,
    ended_at      INTEGER
) STRICT;
CREATE INDEX turns_by_session ON turns (session, started_at DESC, id DESC);
CREATE INDEX turns_by_started ON turns (started_at DESC, id DESC);

-- usage: the cost ledger. Append-only; never deleted with a session.
CREATE TABLE usage (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    turn                TEXT    NOT NULL DEFAULT '',
    session             TEXT    NOT NULL DEFAULT '',
    user_id             TEXT    NOT NULL DEFAULT '',
    channel             TEXT    NOT NULL DEFAULT '',
    trigger             TEXT    NOT NULL DEFAULT '',
    kind                TEXT    NOT NULL DEFAULT '',
    model               TEXT    NOT NULL DEFAULT '',
    input_tokens        INTEGER NOT NULL DEFAULT 0,
    output_tokens       INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd            REAL    NOT NULL DEFAULT 0,
    failed              INTEGER NOT NULL DEFAULT 0,
    at                  INTEGER NOT NULL
) STRICT;
CREATE INDEX usage_by_at ON usage (at);
CREATE INDEX usage_by_user ON usage (user_id, at);
CREATE INDEX usage_by_session ON usage (session, at);
CREATE INDEX usage_by_channel ON usage (channel, at);
CREATE INDEX usage_by_turn ON usage (turn);

-- pending: the paused turn of a session (approval or ask_user), at most one per session.
CREATE TABLE pending (
    session         TEXT    NOT NULL PRIMARY KEY,
    turn            TEXT    NOT NULL DEFAULT '',
    kind            TEXT    NOT NULL DEFAULT '',
    call_id         TEXT    NOT NULL DEFAULT '',
    tool            TEXT    NOT NULL DEFAULT '',
    state           BLOB    NOT NULL DEFAULT x'',
    prompt_platform TEXT    NOT NULL DEFAULT '',
    prompt_channel  TEXT    NOT NULL DEFAULT '',
    prompt_id       TEXT    NOT NULL DEFAULT '',
    requested_by    TEXT    NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER
) STRICT;
CREATE INDEX pending_by_created ON pending (created_at, session);

-- grants: "approve this tool for the session".
CREATE TABLE grants (
    session    TEXT    NOT NULL,
    tool       TEXT    NOT NULL,
    granted_by TEXT    NOT NULL DEFAULT '',
    granted_at INTEGER NOT NULL,
    PRIMARY KEY (session, tool)
) STRICT, WITHOUT ROWID;
