-- 0001_events: the event log, a database file of its own next to the main one
-- (echogate.db -> echogate-events.db). Every turn writes it twice (the claim before the turn,
-- the completion after), so its commits run on their own writer, beside the transcript's.
-- Conventions as in the main database's 0001_init.

-- events: the dispatcher's dedupe record. payload is the JSON of the InboundEvent.
CREATE TABLE events (
    key          TEXT    NOT NULL PRIMARY KEY,
    payload      BLOB    NOT NULL DEFAULT x'',
    claimed_at   INTEGER NOT NULL,
    completed_at INTEGER
) STRICT;
CREATE INDEX events_unfinished ON events (claimed_at, key) WHERE completed_at IS NULL;
CREATE INDEX events_by_completed ON events (completed_at) WHERE completed_at IS NOT NULL;
