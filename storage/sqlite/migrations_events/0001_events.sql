-- 0001_events: the event log, a database file of its own next to the main one
-- (echogate.db -> echogate-events.db). Every turn writes it twice (the claim before the turn,
-- the completion after), so its commits run on their own writer, beside the transcript's.
-- Conventions as in the main database's 0001_init.

-- events: the dispatcher's dedupe record. payload is the JSON of the InboundEvent.
CREATE TABLE events (
    key          TEXT    NOT NULL PRIMARY KEY,
    payload      BLOB    NOT NULL DEFAULT x'',
    claimed_at   INTEGER NOT NULL,
    completed_at INTEGER
) STRICT;
CREATE INDEX events_unfinished ON events (claimed_at, key) WHERE completed_at IS NULL;
CREATE INDEX events_by_completed ON events (completed_at) WHERE completed_at IS NOT NULL;

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

