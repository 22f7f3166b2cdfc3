-- 0010_turn_pages: fewer pages written per turn. Every turn inserts a turns row (its record,
-- before its effects) and, when it ends, a usage row per model call; each page a commit touches
-- is a WAL frame written and later checkpointed.
--
-- turns becomes WITHOUT ROWID: rows are stored in the primary key's b-tree, so the separate
-- index from id to rowid (one more page per insert, and its size on disk) goes. Turn ids start
-- with their creation time, so inserts still append at the right-hand edge. The two secondary
-- indexes already end in id and are unchanged.
--
-- usage drops AUTOINCREMENT, whose counter row in sqlite_sequence was one more page per
-- commit. Ledger rows are never deleted (retention keeps them), so the next id is still
-- max(id) + 1: ids stay increasing and are never reused.
--
-- Both tables are rebuilt with their rows, ids and indexes as they were.

CREATE TABLE turns_0010 (
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
    ended_at      INTEGER,
    agent         TEXT    NOT NULL DEFAULT '',
    posting       TEXT    NOT NULL DEFAULT '',
    cached_input_tokens INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;
INSERT INTO turns_0010 (id, session, event_key, user_id, status, model, route_reason, error,
    input_tokens, output_tokens, cost_usd, started_at, ended_at, agent, posting, cached_input_tokens)
SELECT id, session, event_key, user_id, status, model, route_reason, error,
    input_tokens, output_tokens, cost_usd, started_at, ended_at, agent, posting, cached_input_tokens FROM turns;
DROP TABLE turns;
ALTER TABLE turns_0010 RENAME TO turns;
CREATE INDEX turns_by_session ON turns (session, started_at DESC, id DESC);
CREATE INDEX turns_by_started ON turns (started_at DESC, id DESC);

CREATE TABLE usage_0010 (
    id                  INTEGER PRIMARY KEY,
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
    at                  INTEGER NOT NULL,
    agent               TEXT    NOT NULL DEFAULT ''
) STRICT;
INSERT INTO usage_0010 (id, turn, session, user_id, channel, trigger, kind, model, input_tokens,
    output_tokens, cached_input_tokens, cost_usd, failed, at, agent)
SELECT id, turn, session, user_id, channel, trigger, kind, model, input_tokens,
    output_tokens, cached_input_tokens, cost_usd, failed, at, agent FROM usage;
DROP TABLE usage;
ALTER TABLE usage_0010 RENAME TO usage;
CREATE INDEX usage_by_at ON usage (at);
CREATE INDEX usage_by_user ON usage (user_id, at);
CREATE INDEX usage_by_session ON usage (session, at);
CREATE INDEX usage_by_channel ON usage (channel, at);
CREATE INDEX usage_by_turn ON usage (turn);
CREATE INDEX usage_by_agent ON usage (agent, at);
