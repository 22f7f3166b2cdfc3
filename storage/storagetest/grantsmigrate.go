package storagetest

import (
	"context"
	"maps"
	"testing"

	"github.com/echogate/echogate"
)

// Grants is the part of a store the grants migration check reads.
type Grants interface {
	Grants(ctx context.Context, key echogate.SessionKey, user string) (map[string]string, error)
}

// RunGrantsAcrossMigration writes grants in the schema before grants were per person, with
// insertOld (session, tool, granted_by: the backend's own SQL), runs migrate, and checks that
// each became its granter's own grant and nobody else's; a grant without a granter is gone.
func RunGrantsAcrossMigration(t *testing.T, s Grants, insertOld func(ctx context.Context, session, tool, by string) error, migrate func(context.Context) error) {
	t.Helper()
	ctx := context.Background()
	for _, g := range []struct{ session, tool, by string }{
		{"slack:C1:1", "run_command", "slack:U1"},
		{"slack:C1:1", "http_fetch", "slack:ADMIN"},
		{"slack:C1:1", "mcp__docs", ""},
		{"slack:C2:1", "run_command", "slack:U2"},
	} {
		if err := insertOld(ctx, g.session, g.tool, g.by); err != nil {
			t.Fatalf("insert a grant in the old schema: %v", err)
		}
	}
	if err := migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	for _, tt := range []struct {
		session, user string
		want          map[string]string
	}{
		{"slack:C1:1", "slack:U1", map[string]string{"run_command": "slack:U1"}},
		{"slack:C1:1", "slack:ADMIN", map[string]string{"http_fetch": "slack:ADMIN"}},
		{"slack:C1:1", "slack:U2", map[string]string{}},
		{"slack:C1:1", "", map[string]string{}},
		{"slack:C2:1", "slack:U2", map[string]string{"run_command": "slack:U2"}},
	} {
		got, err := s.Grants(ctx, echogate.SessionKey(tt.session), tt.user)
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("Grants(%s, %q) after the migration = %v, %v; want %v", tt.session, tt.user, got, err, tt.want)
		}
	}
}
