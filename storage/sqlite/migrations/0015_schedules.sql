-- 0015_schedules: scheduled work. schedule_jobs holds config jobs (id "config:<name>") and jobs
-- created in chat (random id), each with its cursor next_at: the next slot not yet decided.
-- schedule_runs holds one row per claimed (job, slot): its primary key is what makes a slot
-- run once, on one replica; submitted_at tells a claim whose trigger was handed over from one
-- whose worker died first; outcome is set when the run's turn ended.
CREATE TABLE schedule_jobs (
    id             TEXT    NOT NULL PRIMARY KEY,
    name           TEXT    NOT NULL DEFAULT '',
    owner          TEXT    NOT NULL,
    deliver        TEXT    NOT NULL,
    agent          TEXT    NOT NULL DEFAULT '',
    prompt         TEXT    NOT NULL,
    cron           TEXT    NOT NULL DEFAULT '',
    timezone       TEXT    NOT NULL DEFAULT '',
    every_s        INTEGER NOT NULL DEFAULT 0,
    at             INTEGER,
    spec_key       TEXT    NOT NULL,
    session        TEXT    NOT NULL DEFAULT 'isolated',
    quiet_if       TEXT    NOT NULL DEFAULT '',
    budget_usd     REAL    NOT NULL DEFAULT 0,
    catch_up       TEXT    NOT NULL DEFAULT 'once',
    max_lateness_s INTEGER NOT NULL DEFAULT 3600,
    max_failures   INTEGER NOT NULL DEFAULT 0,
    paused         INTEGER NOT NULL DEFAULT 0,
    next_at        INTEGER,
    not_before     INTEGER,
    failures       INTEGER NOT NULL DEFAULT 0,
    last_outcome   TEXT    NOT NULL DEFAULT '',
    last_error     TEXT    NOT NULL DEFAULT '',
    last_run_at    INTEGER,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX schedule_jobs_due ON schedule_jobs (next_at) WHERE next_at IS NOT NULL AND paused = 0;
CREATE INDEX schedule_jobs_owner ON schedule_jobs (owner);

CREATE TABLE schedule_runs (
    job_id       TEXT    NOT NULL REFERENCES schedule_jobs (id) ON DELETE CASCADE,
    slot         INTEGER NOT NULL,
    event_key    TEXT    NOT NULL,
    claimed_by   TEXT    NOT NULL,
    claimed_at   INTEGER NOT NULL,
    submitted_at INTEGER,
    turn_id      TEXT    NOT NULL DEFAULT '',
    outcome      TEXT    NOT NULL DEFAULT '',
    error        TEXT    NOT NULL DEFAULT '',
    finished_at  INTEGER,
    PRIMARY KEY (job_id, slot)
) STRICT;
CREATE INDEX schedule_runs_unsubmitted ON schedule_runs (claimed_at) WHERE submitted_at IS NULL AND outcome = '';
CREATE INDEX schedule_runs_unfinished ON schedule_runs (submitted_at) WHERE submitted_at IS NOT NULL AND outcome = '';
