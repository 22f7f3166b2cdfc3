-- 0007_agents: the agent profile (agents:) that served each turn and each ledger entry, so the
-- console, /api/turns and /api/usage break down by agent and per-agent budgets sum their spend.
-- Rows written before this migration belong to no agent ('').
ALTER TABLE turns ADD COLUMN agent text NOT NULL DEFAULT '';
ALTER TABLE usage ADD COLUMN agent text NOT NULL DEFAULT '';
CREATE INDEX usage_by_agent ON usage (agent, at);
