-- 0017_leases (renumber at merge: 0019): named, expiring leases (internal/lease) replicas use to
-- share work out, e.g. Discord shards. expires_at is in microseconds; a lease past it is free.
CREATE TABLE leases (
    name       TEXT    PRIMARY KEY,
    owner      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
);
