package storagetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/mcptoken"
)

// RunMCPTokens checks the mcptoken.Store contract on two stores over one database (two
// replicas): a grant put by one is read by the other; blobs round-trip byte for byte;
// ExpiresAt round-trips (zero as zero) and UpdatedAt is set, both in UTC; Put replaces; the
// per-server grant (user "") and each user's are separate; Get and Delete of a missing grant
// wrap echogate.ErrNotFound; List gives one user's grants sorted by server without blobs; an
// empty server is rejected; a cancelled context fails.
func RunMCPTokens(t *testing.T, open func(t *testing.T) (a, b mcptoken.Store)) {
	t.Helper()
	a, b := open(t)
	u := uniq{prefix: "st-" + randomHex(t, 6) + "-"}
	m := tokenCase{a: a, b: b, ctx: context.Background(), u: u, srv: u.key("tracker"), other: u.key("code"), user: u.key("slack:U1")}
	// Each step starts from the state the one before left.
	m.roundTrip(t)
	m.replaceAndList(t)
	m.deleteUsers(t)
	m.badArguments(t)
}

// tokenCase is RunMCPTokens' fixture: two stores over one database, two servers and a user.
type tokenCase struct {
	a, b             mcptoken.Store
	ctx              context.Context
	u                uniq
	srv, other, user string
}

// roundTrip: a grant put by one replica is read by the other, blob, expiry (in UTC) and
// UpdatedAt intact.
func (m tokenCase) roundTrip(t *testing.T) {
	t.Helper()
	a, b, ctx, srv := m.a, m.b, m.ctx, m.srv
	exp := time.Date(2026, 12, 7, 16, 0, 0, 123_000_000, time.UTC)

	if _, err := b.GetMCPToken(ctx, srv, ""); !errors.Is(err, echogate.ErrNotFound) {
		t.Fatalf("GetMCPToken of nothing = %v, want ErrNotFound", err)
	}
	blob := []byte{0, 1, 2, 0xff, 'x'}
	if err := a.PutMCPToken(ctx, mcptoken.Record{Server: srv, Sealed: blob, ExpiresAt: exp}); err != nil {
		t.Fatalf("PutMCPToken = %v", err)
	}
	got, err := b.GetMCPToken(ctx, srv, "")
	if err != nil {
		t.Fatalf("GetMCPToken on the other replica = %v", err)
	}
	if got.Server != srv || got.User != "" || !bytes.Equal(got.Sealed, blob) || !got.ExpiresAt.Equal(exp) || got.ExpiresAt.Location() != time.UTC {
		t.Errorf("GetMCPToken = %+v, want server %s, blob %v, expiry %v UTC", got, srv, blob, exp)
	}
	if got.UpdatedAt.IsZero() || got.UpdatedAt.Location() != time.UTC {
		t.Errorf("UpdatedAt = %v, want set, in UTC", got.UpdatedAt)
	}
}

// replaceAndList: Put replaces; a user's grant and another server's are separate records;
// List gives the user's grants sorted by server, without blobs.
func (m tokenCase) replaceAndList(t *testing.T) {
	t.Helper()
	a, b, ctx, u, srv, other, user := m.a, m.b, m.ctx, m.u, m.srv, m.other, m.user
	// Replace; a user's grant and another server's are separate records.
	if err := b.PutMCPToken(ctx, mcptoken.Record{Server: srv, Sealed: []byte("second")}); err != nil {
		t.Fatalf("PutMCPToken (replace) = %v", err)
	}
	for _, r := range []mcptoken.Record{{Server: srv, User: user, Sealed: []byte("users")}, {Server: other, User: user, Sealed: []byte("users2")}} {
		if err := a.PutMCPToken(ctx, r); err != nil {
			t.Fatalf("PutMCPToken(%s, %s) = %v", r.Server, r.User, err)
		}
	}
	if got, _ := a.GetMCPToken(ctx, srv, ""); string(got.Sealed) != "second" || !got.ExpiresAt.IsZero() {
		t.Errorf("after replace = %q expiring %v, want \"second\" with zero expiry", got.Sealed, got.ExpiresAt)
	}
	if got, _ := a.GetMCPToken(ctx, srv, user); string(got.Sealed) != "users" {
		t.Errorf("user's grant = %q, want \"users\"", got.Sealed)
	}
	list, err := b.ListMCPTokens(ctx, user)
	if err != nil {
		t.Fatalf("ListMCPTokens = %v", err)
	}
	var mine []mcptoken.Record
	for _, r := range list {
		if u.mine(r.Server) {
			mine = append(mine, r)
		}
	}
	if len(mine) != 2 || mine[0].Server != other || mine[1].Server != srv || mine[0].User != user || len(mine[0].Sealed) != 0 {
		t.Errorf("ListMCPTokens(user) = %+v, want %s then %s for %s, without blobs", mine, other, srv, user)
	}
}

// deleteUsers: deleting one user's grant keeps the server's; a missing grant is ErrNotFound.
func (m tokenCase) deleteUsers(t *testing.T) {
	t.Helper()
	a, b, ctx, srv, user := m.a, m.b, m.ctx, m.srv, m.user
	// Delete one user's grant: the server's stays.
	if err := b.DeleteMCPToken(ctx, srv, user); err != nil {
		t.Fatalf("DeleteMCPToken = %v", err)
	}
	if _, err := a.GetMCPToken(ctx, srv, user); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetMCPToken after delete = %v, want ErrNotFound", err)
	}
	if err := a.DeleteMCPToken(ctx, srv, user); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("DeleteMCPToken again = %v, want ErrNotFound", err)
	}
	if _, err := a.GetMCPToken(ctx, srv, ""); err != nil {
		t.Errorf("the server's grant after deleting a user's = %v, want it kept", err)
	}
}

// badArguments: an empty server and a cancelled context fail.
func (m tokenCase) badArguments(t *testing.T) {
	t.Helper()
	a, ctx, srv := m.a, m.ctx, m.srv
	if err := a.PutMCPToken(ctx, mcptoken.Record{Sealed: []byte("x")}); err == nil {
		t.Error("PutMCPToken with an empty server = nil, want an error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.GetMCPToken(cctx, srv, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("GetMCPToken with a cancelled context = %v, want context.Canceled", err)
	}
	if err := a.PutMCPToken(cctx, mcptoken.Record{Server: srv, Sealed: []byte("x")}); !errors.Is(err, context.Canceled) {
		t.Errorf("PutMCPToken with a cancelled context = %v, want context.Canceled", err)
	}
}
