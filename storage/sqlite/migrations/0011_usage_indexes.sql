-- 0011_usage_indexes: two fewer pages written per ledger entry. Every index of usage is a
-- b-tree page each commit that records usage writes (a WAL frame, later checkpointed), and a
-- turn records usage once or twice.
--
-- usage_by_channel and usage_by_agent go. A query by channel or agent is bounded by time in
-- the budgets (a channel's or an agent's day or month) and reads the time range through
-- usage_by_at, filtering by channel or agent, as the gateway-wide day and month budgets do
-- already; channels and agents are few, so such a range holds little else. Unbounded queries
-- (the console's spend of an agent, all time) read the ledger once through, like the console's
-- all-time total. The selective keys keep their indexes: user, session and turn.
DROP INDEX usage_by_channel;
DROP INDEX usage_by_agent;
