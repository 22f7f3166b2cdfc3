// Package pgtrips holds the end-to-end count of a turn's PostgreSQL round trips: the pipeline
// on the PostgreSQL store (with context compression wired, as the gateway runs it), one plain
// turn traced from the event's arrival to its end write. Its test fails when the turn's
// critical path or its round trips in all exceed the target (3, directly and through PgBouncer). It needs ECHOGATE_TEST_DATABASE_URL and skips without it.
package pgtrips
