-- 0017_session_leases: session locks as leases, for a store behind a transaction pooler
-- (database.pooler: transaction), where a session-level advisory lock would live on a server
-- connection the pooler hands to other clients (storage/postgres/lease.go). Direct connections
-- keep using advisory locks; the table stays empty then. PostgreSQL only: SQLite has one process.
CREATE TABLE session_leases (
    session    text        NOT NULL PRIMARY KEY,
    owner      text        NOT NULL,
    expires_at timestamptz NOT NULL
);
