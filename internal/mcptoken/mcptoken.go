// Package mcptoken is the contract between tools/mcp, which keeps the OAuth grants of MCP
// servers, and the stores (storage/sqlite, storage/postgres) that hold them. A store sees only
// sealed blobs (internal/secretbox): it never holds a token in the clear.
package mcptoken

import (
	"context"
	"time"
)

// Record is one grant: for a server, per server (User "") or for one chat user (a qualified
// user id, "slack:U0123").
type Record struct {
	Server string
	User   string
	// Sealed is the grant, encrypted by the caller; the store keeps it as given.
	Sealed []byte
	// ExpiresAt is when the access token expires (zero: unknown), kept in the clear so that
	// listings can tell stale grants without opening them.
	ExpiresAt time.Time
	// UpdatedAt is set by the store on every Put.
	UpdatedAt time.Time
}

// Store keeps grants, one per (server, user). Get and Delete of a missing record wrap
// echogate.ErrNotFound. Put replaces the record of the same key.
type Store interface {
	GetMCPToken(ctx context.Context, server, user string) (Record, error)
	PutMCPToken(ctx context.Context, r Record) error
	DeleteMCPToken(ctx context.Context, server, user string) error
	// ListMCPTokens lists the records of one user ("" : the per-server grants), sorted by
	// server; Sealed is left empty.
	ListMCPTokens(ctx context.Context, user string) ([]Record, error)
}
