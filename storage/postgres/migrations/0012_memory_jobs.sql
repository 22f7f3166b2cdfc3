-- 0012_memory_jobs: consolidation is per person; see storage/sqlite/migrations/0012_memory_jobs.sql.
-- memory_jobs holds one job per (session, user); existing rows become the job of the user they
-- named, and their cursor the session's floor (memory_floors), where the job of a person who had
-- none yet starts.
CREATE TABLE memory_jobs (
    session     text        NOT NULL,
    user_id     text        NOT NULL,
    channel     text        NOT NULL DEFAULT '',
    cursor      bigint      NOT NULL DEFAULT 0,
    due_at      timestamptz,
    not_after   timestamptz,
    gen         bigint      NOT NULL DEFAULT 0,
    worker      text        NOT NULL DEFAULT '',
    lease_until timestamptz,
    attempts    integer     NOT NULL DEFAULT 0,
    last_error  text        NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (session, user_id)
);
CREATE INDEX memory_jobs_due ON memory_jobs (due_at) WHERE due_at IS NOT NULL;

INSERT INTO memory_jobs (session, user_id, channel, cursor, due_at, not_after, gen, attempts, last_error, updated_at)
SELECT session, user_id, channel, cursor, due_at, not_after, gen, attempts, last_error, updated_at FROM memory_sessions;

CREATE TABLE memory_floors (
    session text   NOT NULL PRIMARY KEY,
    cursor  bigint NOT NULL
);
INSERT INTO memory_floors (session, cursor) SELECT session, cursor FROM memory_sessions WHERE cursor > 0;

DROP TABLE memory_sessions;
