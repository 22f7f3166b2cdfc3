-- 0002_pipeline: the pipeline's tables (mirror of storage/sqlite's 0001_init).
--
-- Conventions:
--   * every *_at column is timestamptz (microsecond precision, returned as UTC); NULL means
--     "not set" for the optional ones;
--   * session keys, ids and names are text, never NULL (empty string when absent); the keys
--     that order lists are COLLATE "C" (byte order, as in SQLite, whatever the database locale);
--   * tables have no foreign keys: the transcript is written on the hot path and DeleteSession
--     removes a session's rows explicitly in one transaction.

-- sessions: one row per conversation the gateway has seen.
CREATE TABLE sessions (
    key        text        COLLATE "C" NOT NULL PRIMARY KEY,
    platform   text        NOT NULL DEFAULT '',
    workspace  text        NOT NULL DEFAULT '',
    channel    text        NOT NULL DEFAULT '',
    thread     text        NOT NULL DEFAULT '',
    dm         boolean     NOT NULL DEFAULT false,
    user_id    text        NOT NULL DEFAULT '',
    ephemeral  boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX sessions_by_updated ON sessions (updated_at DESC, key DESC);

-- message_seqs: the last transcript Seq handed out per session. AppendMessages bumps it with an
-- upsert, whose row lock serializes concurrent appends to one session (across replicas too).
CREATE TABLE message_seqs (
    session  text   NOT NULL PRIMARY KEY,
    last_seq bigint NOT NULL
);

-- messages: the transcript; body is the JSON of echogate.Message. json (not jsonb) keeps the
-- text as written and accepts \u0000, which jsonb rejects.
CREATE TABLE messages (
    session text        NOT NULL,
    seq     bigint      NOT NULL,
    turn    text        NOT NULL DEFAULT '',
    role    text        NOT NULL DEFAULT '',
    body    json        NOT NULL,
    at      timestamptz NOT NULL,
    PRIMARY KEY (session, seq)
);

-- events: the dispatcher's dedupe record. payload is the JSON of the InboundEvent (opaque here).
CREATE TABLE events (
    key          text        COLLATE "C" NOT NULL PRIMARY KEY,
    payload      bytea       NOT NULL DEFAULT '\x',
    claimed_at   timestamptz NOT NULL,
    completed_at timestamptz
);
CREATE INDEX events_unfinished ON events (claimed_at, key) WHERE completed_at IS NULL;
CREATE INDEX events_by_completed ON events (completed_at) WHERE completed_at IS NOT NULL;

-- turns: one row per turn. Kept when the session is deleted (they index the money spent).
CREATE TABLE turns (
    id            text             COLLATE "C" NOT NULL PRIMARY KEY,
    session       text             NOT NULL,
    event_key     text             NOT NULL DEFAULT '',
    user_id       text             NOT NULL DEFAULT '',
    status        text             NOT NULL DEFAULT '',
    model         text             NOT NULL DEFAULT '',
    route_reason  text             NOT NULL DEFAULT '',
    error         text             NOT NULL DEFAULT '',
    input_tokens  bigint           NOT NULL DEFAULT 0,
    output_tokens bigint           NOT NULL DEFAULT 0,
    cost_usd      double precision NOT NULL DEFAULT 0,
    started_at    timestamptz      NOT NULL,
    ended_at      timestamptz
);
CREATE INDEX turns_by_session ON turns (session, started_at DESC, id DESC);
CREATE INDEX turns_by_started ON turns (started_at DESC, id DESC);

-- usage: the cost ledger. Append-only; never deleted with a session.
CREATE TABLE usage (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    turn                text             NOT NULL DEFAULT '',
    session             text             NOT NULL DEFAULT '',
    user_id             text             NOT NULL DEFAULT '',
    channel             text             NOT NULL DEFAULT '',
    trigger             text             NOT NULL DEFAULT '',
    kind                text             NOT NULL DEFAULT '',
    model               text             NOT NULL DEFAULT '',
    input_tokens        bigint           NOT NULL DEFAULT 0,
    output_tokens       bigint           NOT NULL DEFAULT 0,
    cached_input_tokens bigint           NOT NULL DEFAULT 0,
    cost_usd            double precision NOT NULL DEFAULT 0,
    failed              boolean          NOT NULL DEFAULT false,
    at                  timestamptz      NOT NULL
);
CREATE INDEX usage_by_at ON usage (at);
CREATE INDEX usage_by_user ON usage (user_id, at);
CREATE INDEX usage_by_session ON usage (session, at);
CREATE INDEX usage_by_channel ON usage (channel, at);
CREATE INDEX usage_by_turn ON usage (turn);

-- pending: the paused turn of a session (approval or ask_user), at most one per session.
CREATE TABLE pending (
    session         text        COLLATE "C" NOT NULL PRIMARY KEY,
    turn            text        NOT NULL DEFAULT '',
    kind            text        NOT NULL DEFAULT '',
    call_id         text        NOT NULL DEFAULT '',
    tool            text        NOT NULL DEFAULT '',
    state           bytea       NOT NULL DEFAULT '\x',
    prompt_platform text        NOT NULL DEFAULT '',
    prompt_channel  text        NOT NULL DEFAULT '',
    prompt_id       text        NOT NULL DEFAULT '',
    requested_by    text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz
);
CREATE INDEX pending_by_created ON pending (created_at, session);

-- grants: "approve this tool for the session".
CREATE TABLE grants (
    session    text        NOT NULL,
    tool       text        COLLATE "C" NOT NULL,
    granted_by text        NOT NULL DEFAULT '',
    granted_at timestamptz NOT NULL,
    PRIMARY KEY (session, tool)
);
