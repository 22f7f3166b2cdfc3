-- 0015_schedules: scheduled work; see storage/sqlite/migrations/0015_schedules.sql. The primary
-- key of schedule_runs makes a (job, slot) run once across replicas; ClaimSlot moves the job's
-- cursor (next_at) with a compare-and-set in the same transaction.
CREATE TABLE schedule_jobs (
    id             text             NOT NULL PRIMARY KEY,
    name           text             NOT NULL DEFAULT '',
    owner          text             NOT NULL,
    deliver        text             NOT NULL,
    agent          text             NOT NULL DEFAULT '',
    prompt         text             NOT NULL,
    cron           text             NOT NULL DEFAULT '',
    timezone       text             NOT NULL DEFAULT '',
    every_s        bigint           NOT NULL DEFAULT 0,
    at             timestamptz,
    spec_key       text             NOT NULL,
    session        text             NOT NULL DEFAULT 'isolated',
    quiet_if       text             NOT NULL DEFAULT '',
    budget_usd     double precision NOT NULL DEFAULT 0,
    catch_up       text             NOT NULL DEFAULT 'once',
    max_lateness_s bigint           NOT NULL DEFAULT 3600,
    max_failures   integer          NOT NULL DEFAULT 0,
    paused         boolean          NOT NULL DEFAULT false,
    next_at        timestamptz,
    not_before     timestamptz,
    failures       integer          NOT NULL DEFAULT 0,
    last_outcome   text             NOT NULL DEFAULT '',
    last_error     text             NOT NULL DEFAULT '',
    last_run_at    timestamptz,
    created_at     timestamptz      NOT NULL,
    updated_at     timestamptz      NOT NULL
);
CREATE INDEX schedule_jobs_due ON schedule_jobs (next_at) WHERE next_at IS NOT NULL AND NOT paused;
CREATE INDEX schedule_jobs_owner ON schedule_jobs (owner);

CREATE TABLE schedule_runs (
    job_id       text        NOT NULL REFERENCES schedule_jobs (id) ON DELETE CASCADE,
    slot         timestamptz NOT NULL,
    event_key    text        NOT NULL,
    claimed_by   text        NOT NULL,
    claimed_at   timestamptz NOT NULL,
    submitted_at timestamptz,
    turn_id      text        NOT NULL DEFAULT '',
    outcome      text        NOT NULL DEFAULT '',
    error        text        NOT NULL DEFAULT '',
    finished_at  timestamptz,
    PRIMARY KEY (job_id, slot)
);
CREATE INDEX schedule_runs_unsubmitted ON schedule_runs (claimed_at) WHERE submitted_at IS NULL AND outcome = '';
CREATE INDEX schedule_runs_unfinished ON schedule_runs (submitted_at) WHERE submitted_at IS NOT NULL AND outcome = '';
