-- 0017_leases (renumber at merge: 0019): named, expiring leases; see
-- storage/sqlite/migrations/0017_leases.sql.
CREATE TABLE leases (
    name       text        PRIMARY KEY,
    owner      text        NOT NULL,
    expires_at timestamptz NOT NULL
);
