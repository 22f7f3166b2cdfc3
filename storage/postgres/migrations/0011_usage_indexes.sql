-- 0011_usage_indexes: two fewer indexes to maintain per ledger entry, as in SQLite's 0011.
-- A query by channel or agent is bounded by time in the budgets and reads that range through
-- usage_by_at, filtering by channel or agent (the gateway-wide day and month budgets do the
-- same); the selective keys keep their indexes: user, session and turn.
DROP INDEX IF EXISTS usage_by_channel;
DROP INDEX IF EXISTS usage_by_agent;
