-- 0016_mcp_tokens: OAuth grants of MCP servers; see storage/sqlite/migrations/0016_mcp_tokens.sql.
-- sealed is encrypted with ECHOGATE_SECRET_KEY before it reaches the database; replicas share
-- grants (and refreshed tokens) through this table.
CREATE TABLE mcp_tokens (
    server     text        NOT NULL,
    user_id    text        NOT NULL DEFAULT '',
    sealed     bytea       NOT NULL,
    expires_at timestamptz,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (server, user_id)
);
CREATE INDEX mcp_tokens_user ON mcp_tokens (user_id, server);
