package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/mcptoken"
	"github.com/echogate/echogate/internal/secretbox"
)

// blobStore is an in-memory mcptoken.Store (the database stores run storagetest.RunMCPTokens).
type blobStore struct {
	mu sync.Mutex
	m  map[[2]string]mcptoken.Record
}

func (b *blobStore) GetMCPToken(_ context.Context, server, user string) (mcptoken.Record, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.m[[2]string{server, user}]
	if !ok {
		return r, fmt.Errorf("get: %w", echogate.ErrNotFound)
	}
	return r, nil
}

func (b *blobStore) PutMCPToken(_ context.Context, r mcptoken.Record) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r.UpdatedAt = time.Now()
	b.m[[2]string{r.Server, r.User}] = r
	return nil
}

func (b *blobStore) DeleteMCPToken(_ context.Context, server, user string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[[2]string{server, user}]; !ok {
		return fmt.Errorf("delete: %w", echogate.ErrNotFound)
	}
	delete(b.m, [2]string{server, user})
	return nil
}

func (b *blobStore) ListMCPTokens(_ context.Context, user string) ([]mcptoken.Record, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []mcptoken.Record
	for k, r := range b.m {
		if k[1] == user {
			r.Sealed = nil
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out, nil
}

func TestSealedTokenStoreKeepsNoTokenInTheClear(t *testing.T) {
	db := &blobStore{m: map[[2]string]mcptoken.Record{}}
	box, _ := secretbox.New(bytes.Repeat([]byte{3}, 32))
	s := NewSealedTokenStore(db, box)
	ctx := context.Background()
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	alice, bob := TokenKey{"code", "slack:UALICE"}, TokenKey{"code", "slack:UBOB"}
	if err := s.Put(ctx, alice, &Grant{AccessToken: "at-alice-secret", RefreshToken: "rt-alice-secret", Expiry: exp, ClientID: "c", TokenURL: "https://as/token"}); err != nil {
		t.Fatal(err)
	}
	rec := db.m[[2]string{"code", "slack:UALICE"}]
	if bytes.Contains(rec.Sealed, []byte("alice-secret")) || !rec.ExpiresAt.Equal(exp) {
		t.Fatalf("stored record = %q expiring %v, want ciphertext only, expiring %v", rec.Sealed, rec.ExpiresAt, exp)
	}
	g, err := s.Get(ctx, alice)
	if err != nil || g.AccessToken != "at-alice-secret" || g.RefreshToken != "rt-alice-secret" || !g.Expiry.Equal(exp) {
		t.Fatalf("Get(alice) = %+v, %v, want the grant back", g, err)
	}
	if _, err := s.Get(ctx, bob); !errors.Is(err, ErrNoToken) {
		t.Errorf("Get(bob) = %v, want ErrNoToken: tokens never cross users", err)
	}
	// A blob copied to another user's row does not open there.
	rec.User = bob.User
	db.m[[2]string{"code", bob.User}] = rec
	if g, err := s.Get(ctx, bob); !errors.Is(err, ErrBadGrant) || !strings.Contains(err.Error(), "log in again") {
		t.Errorf("Get(bob) of alice's copied blob = %+v, %v, want a refusal", g, err)
	}
	// Another key (ECHOGATE_SECRET_KEY changed): a clear error naming the variable.
	other, _ := secretbox.New(bytes.Repeat([]byte{4}, 32))
	if _, err := NewSealedTokenStore(db, other).Get(ctx, alice); !errors.Is(err, ErrBadGrant) || !strings.Contains(err.Error(), secretbox.EnvVar) {
		t.Errorf("Get with another key = %v, want an error naming %s", err, secretbox.EnvVar)
	}
	if err := s.Put(ctx, TokenKey{"tracker", alice.User}, &Grant{AccessToken: "t2"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, alice.User)
	if err != nil || len(list) != 2 || list[0].Key != alice || !list[0].ExpiresAt.Equal(exp) || list[1].Key.Server != "tracker" {
		t.Errorf("List(alice) = %+v, %v, want code (expiring %v) then tracker", list, err, exp)
	}
	if err := s.Delete(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, alice); !errors.Is(err, ErrNoToken) {
		t.Errorf("Delete twice = %v, want ErrNoToken", err)
	}
}
