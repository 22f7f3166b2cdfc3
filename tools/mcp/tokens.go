package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/mcptoken"
	"github.com/echogate/echogate/internal/secretbox"
)

// ErrNoToken is wrapped by TokenStore.Get when there is no grant for the key. It wraps
// echogate.ErrNotFound.
var ErrNoToken = fmt.Errorf("mcp: no OAuth grant: %w", echogate.ErrNotFound)

// ErrBadGrant is wrapped by SealedTokenStore.Get when a stored grant cannot be opened (sealed
// with another ECHOGATE_SECRET_KEY, or altered) or read: a new login replaces it.
var ErrBadGrant = errors.New("mcp: stored OAuth grant unreadable")

// TokenKey names one grant: a server's (User "") or one chat user's for a per-user server.
type TokenKey struct {
	Server string
	User   string
}

// Grant is what a login leaves: the token and what refreshing it needs (the client the
// authorization server knows, its token endpoint, the scopes granted).
type Grant struct {
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	TokenURL     string    `json:"token_url"`
	AuthStyle    int       `json:"auth_style,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
	// Issuer is the authorization server's issuer the login's redirect named (RFC 9207), where
	// Logout finds the revocation endpoint.
	Issuer string `json:"issuer,omitempty"`
}

func (g *Grant) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: g.AccessToken, RefreshToken: g.RefreshToken, TokenType: g.TokenType, Expiry: g.Expiry}
}

func (g *Grant) oauthConfig() *oauth2.Config {
	return &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: oauth2.AuthStyle(g.AuthStyle)}}
}

// TokenStore keeps grants. Get of a missing grant wraps ErrNoToken. Implementations are safe
// for concurrent use; replicas of a gateway share one (SealedTokenStore over the database).
type TokenStore interface {
	Get(ctx context.Context, key TokenKey) (*Grant, error)
	Put(ctx context.Context, key TokenKey, g *Grant) error
	Delete(ctx context.Context, key TokenKey) error
}

// MemoryTokenStore keeps grants in memory: for tests and a single `login` run.
type MemoryTokenStore struct {
	mu sync.Mutex
	m  map[TokenKey]Grant
}

// NewMemoryTokenStore returns an empty MemoryTokenStore.
func NewMemoryTokenStore() *MemoryTokenStore { return &MemoryTokenStore{m: map[TokenKey]Grant{}} }

func (s *MemoryTokenStore) Get(ctx context.Context, key TokenKey) (*Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.m[key]
	if !ok {
		return nil, fmt.Errorf("%w for %s", ErrNoToken, keyText(key))
	}
	return &g, nil
}

func (s *MemoryTokenStore) Put(ctx context.Context, key TokenKey, g *Grant) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = *g
	return nil
}

func (s *MemoryTokenStore) Delete(ctx context.Context, key TokenKey) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; !ok {
		return fmt.Errorf("%w for %s", ErrNoToken, keyText(key))
	}
	delete(s.m, key)
	return nil
}

// SealedTokenStore keeps grants in a database store, sealed with box: the database holds only
// ciphertext bound to its (server, user) row.
type SealedTokenStore struct {
	db  mcptoken.Store
	box *secretbox.Box
}

// NewSealedTokenStore returns a TokenStore over db that seals every grant with box.
func NewSealedTokenStore(db mcptoken.Store, box *secretbox.Box) *SealedTokenStore {
	return &SealedTokenStore{db: db, box: box}
}

// sealAD binds a blob to its row.
func sealAD(key TokenKey) []byte { return []byte("mcp_token\x00" + key.Server + "\x00" + key.User) }

func (s *SealedTokenStore) Get(ctx context.Context, key TokenKey) (*Grant, error) {
	r, err := s.db.GetMCPToken(ctx, key.Server, key.User)
	if errors.Is(err, echogate.ErrNotFound) {
		return nil, fmt.Errorf("%w for %s", ErrNoToken, keyText(key))
	}
	if err != nil {
		return nil, err
	}
	plain, err := s.box.Open(r.Sealed, sealAD(key))
	if err != nil {
		return nil, fmt.Errorf("%w: the grant for %s cannot be opened (was %s changed?); log in again: %w", ErrBadGrant, keyText(key), secretbox.EnvVar, err)
	}
	var g Grant
	if err := json.Unmarshal(plain, &g); err != nil {
		return nil, fmt.Errorf("%w: the grant for %s is malformed; log in again: %w", ErrBadGrant, keyText(key), err)
	}
	return &g, nil
}

func (s *SealedTokenStore) Put(ctx context.Context, key TokenKey, g *Grant) error {
	plain, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return s.db.PutMCPToken(ctx, mcptoken.Record{Server: key.Server, User: key.User,
		Sealed: s.box.Seal(plain, sealAD(key)), ExpiresAt: g.Expiry})
}

func (s *SealedTokenStore) Delete(ctx context.Context, key TokenKey) error {
	err := s.db.DeleteMCPToken(ctx, key.Server, key.User)
	if errors.Is(err, echogate.ErrNotFound) {
		return fmt.Errorf("%w for %s", ErrNoToken, keyText(key))
	}
	return err
}

func keyText(k TokenKey) string {
	if k.User == "" {
		return "server " + k.Server
	}
	return "server " + k.Server + ", user " + k.User
}

// GrantInfo describes a stored grant without its tokens.
type GrantInfo struct {
	Key       TokenKey
	ExpiresAt time.Time // the access token's expiry; zero: unknown
	UpdatedAt time.Time // last login or refresh
}

// List returns user's grants ("" : the servers' own), sorted by server, without opening
// them: for `/echogate mcp` (a person's grants, to revoke with Delete) and status views.
func (s *SealedTokenStore) List(ctx context.Context, user string) ([]GrantInfo, error) {
	recs, err := s.db.ListMCPTokens(ctx, user)
	if err != nil {
		return nil, err
	}
	out := make([]GrantInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, GrantInfo{Key: TokenKey{Server: r.Server, User: r.User}, ExpiresAt: r.ExpiresAt, UpdatedAt: r.UpdatedAt})
	}
	return out, nil
}
