-- 0016_mcp_tokens: OAuth grants of MCP servers (tools/mcp), one per (server, user); user_id ''
-- is the server's own grant, else a qualified chat user id. sealed is the grant encrypted with
-- ECHOGATE_SECRET_KEY (internal/secretbox): the database never holds a token in the clear.
-- expires_at (microseconds, NULL: unknown) is the access token's expiry, kept in the clear for
-- listings.
CREATE TABLE mcp_tokens (
    server     TEXT    NOT NULL,
    user_id    TEXT    NOT NULL DEFAULT '',
    sealed     BLOB    NOT NULL,
    expires_at INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (server, user_id)
);
CREATE INDEX mcp_tokens_user ON mcp_tokens (user_id, server);
