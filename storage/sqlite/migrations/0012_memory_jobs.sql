-- 0012_memory_jobs: consolidation is per person. memory_sessions held one job per session whose
-- user was overwritten by every turn, so the last poster of a shared thread was credited with
-- everyone's words. memory_jobs holds one job per (session, user): its cursor is the last
-- transcript seq of that person's turns already consolidated, and the job reads only them.
--
-- Existing rows become the job of the user they named, cursor and pending state kept (a lease
-- of the old binary is dropped: no worker of it runs after the migration). Their cursor also
-- becomes the session's floor (memory_floors): the messages up to it were consolidated once
-- already, under the old rule, so the job of a person who had none yet starts there instead of
-- extracting them a second time.
CREATE TABLE memory_jobs (
    session     TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    channel     TEXT    NOT NULL DEFAULT '',
    cursor      INTEGER NOT NULL DEFAULT 0,
    due_at      INTEGER,             -- NULL: nothing pending
    not_after   INTEGER,             -- debounce cap of the pending job
    gen         INTEGER NOT NULL DEFAULT 0, -- bumped by every enqueue
    worker      TEXT    NOT NULL DEFAULT '',
    lease_until INTEGER,
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT    NOT NULL DEFAULT '',
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (session, user_id)
) STRICT;
CREATE INDEX memory_jobs_due ON memory_jobs (due_at) WHERE due_at IS NOT NULL;

INSERT INTO memory_jobs (session, user_id, channel, cursor, due_at, not_after, gen, attempts, last_error, updated_at)
SELECT session, user_id, channel, cursor, due_at, not_after, gen, attempts, last_error, updated_at FROM memory_sessions;

CREATE TABLE memory_floors (
    session TEXT    NOT NULL PRIMARY KEY,
    cursor  INTEGER NOT NULL
) STRICT;
INSERT INTO memory_floors (session, cursor) SELECT session, cursor FROM memory_sessions WHERE cursor > 0;

DROP TABLE memory_sessions;
