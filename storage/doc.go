// Package storage groups the gateway's persistence backends.
//
//   - storage/sqlite: the embedded default (a single file under the data dir, pure Go, no cgo).
//   - storage/postgres: PostgreSQL (+ pgvector), selected by DATABASE_URL.
//   - storage/storagetest: the conformance suite both backends pass.
//
// The backends implement the store interfaces their consumers declare (pipeline.Store and, later,
// memory.Store and knowledge.Store) without importing those packages: Go interfaces are
// structural, and the composition root (cmd/echogate) asserts the match at compile time.
//
// Shared conventions, which the conformance suite pins:
//   - times are stored in UTC with microsecond precision and returned as UTC time.Time; a zero
//     optional time (TurnRecord.EndedAt, PendingTurn.ExpiresAt) round-trips as the zero time;
//   - a list limit <= 0 means "no limit";
//   - Get*, Update*, Delete* and CompleteEvent of a record that does not exist wrap
//     echogate.ErrNotFound; History, Grants, List* and SumUsage of nothing return empty results;
//   - UpsertSession keeps the first conversation, user and CreatedAt and never moves UpdatedAt
//     back; DeleteSession keeps turns and the usage ledger;
//   - empty keys and ids are rejected with an error instead of being stored;
//   - a cancelled or expired ctx makes every method fail with an error wrapping ctx.Err().
package storage
