package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/echogate/echogate/internal/mcptoken"
)

// OAuth grants of MCP servers (mcptoken.Store): sealed blobs, one per (server, user).

const qPutMCPToken = `INSERT INTO mcp_tokens (server, user_id, sealed, expires_at, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (server, user_id) DO UPDATE SET sealed = excluded.sealed, expires_at = excluded.expires_at,
updated_at = excluded.updated_at`

// GetMCPToken returns the grant of (server, user); a missing one wraps ErrNotFound.
func (s *Store) GetMCPToken(ctx context.Context, server, user string) (mcptoken.Record, error) {
	if server == "" {
		return mcptoken.Record{}, fmt.Errorf("sqlite: get mcp token: %w: empty server", ErrInvalid)
	}
	recs, err := s.queryMCPTokens(ctx, "get mcp token", `SELECT server, user_id, sealed, expires_at, updated_at
FROM mcp_tokens WHERE server = ? AND user_id = ?`, server, user)
	if err != nil {
		return mcptoken.Record{}, err
	}
	if len(recs) == 0 {
		return mcptoken.Record{}, fmt.Errorf("sqlite: get mcp token %q: %w", server, ErrNotFound)
	}
	return recs[0], nil
}

// PutMCPToken stores r, replacing the grant of the same (server, user).
func (s *Store) PutMCPToken(ctx context.Context, r mcptoken.Record) error {
	if r.Server == "" || len(r.Sealed) == 0 {
		return fmt.Errorf("sqlite: put mcp token: %w: a grant needs a server and a sealed blob", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: put mcp token %q: %w", r.Server, err)
	}
	args := []any{r.Server, r.User, r.Sealed, optMicros(r.ExpiresAt), toMicros(s.now())}
	if err := d.write(ctx, func(tx *wtx) error { _, err := tx.exec(qPutMCPToken, args...); return err }); err != nil {
		return fail(ctx, err, "put mcp token %q", r.Server)
	}
	return nil
}

// DeleteMCPToken removes the grant of (server, user); a missing one wraps ErrNotFound.
func (s *Store) DeleteMCPToken(ctx context.Context, server, user string) error {
	if server == "" {
		return fmt.Errorf("sqlite: delete mcp token: %w: empty server", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: delete mcp token %q: %w", server, err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		n, err = tx.rowsAffected(`DELETE FROM mcp_tokens WHERE server = ? AND user_id = ?`, server, user)
		return err
	})
	if err != nil {
		return fail(ctx, err, "delete mcp token %q", server)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: delete mcp token %q: %w", server, ErrNotFound)
	}
	return nil
}

// ListMCPTokens lists user's grants ("" : the servers' own) by server, without blobs.
func (s *Store) ListMCPTokens(ctx context.Context, user string) ([]mcptoken.Record, error) {
	return s.queryMCPTokens(ctx, "list mcp tokens", `SELECT server, user_id, x'', expires_at, updated_at
FROM mcp_tokens WHERE user_id = ? ORDER BY server`, user)
}

func (s *Store) queryMCPTokens(ctx context.Context, op, q string, args ...any) ([]mcptoken.Record, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return queryAll(ctx, d, op, q, args, scanMCPToken)
}

// scanMCPToken reads (server, user_id, sealed, expires_at, updated_at).
func scanMCPToken(row rowScanner) (mcptoken.Record, error) {
	var r mcptoken.Record
	var exp sql.NullInt64
	var updated int64
	if err := row.Scan(&r.Server, &r.User, &r.Sealed, &exp, &updated); err != nil {
		return r, err
	}
	if len(r.Sealed) == 0 {
		r.Sealed = nil
	}
	r.ExpiresAt, r.UpdatedAt = fromOptMicros(exp), fromMicros(updated)
	return r, nil
}
