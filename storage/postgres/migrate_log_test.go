package postgres_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate/storage/postgres"
)

// lockedBuffer is a bytes.Buffer for a logger written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMigrateLogsOneLine: migrating an empty schema logs one info line for all the migrations
// (each one only at debug level); a schema already current logs none.
func TestMigrateLogsOneLine(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := postgres.New(postgres.Config{URL: requireURL(t), Schema: newSchema(t), MaxConns: 2}, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	_, known, err := st.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, debug := 0, 0
	for _, l := range strings.Split(buf.String(), "\n") {
		switch {
		case !strings.Contains(l, "applied migration"):
		case strings.Contains(l, "level=INFO"):
			info++
		case strings.Contains(l, "level=DEBUG"):
			debug++
		}
	}
	if info != 1 || debug != known {
		t.Errorf("Migrate on an empty schema logged %d info and %d debug lines, want 1 and %d:\n%s", info, debug, known, buf.String())
	}
	before := buf.String()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if after := buf.String()[len(before):]; strings.Contains(after, "applied migration") {
		t.Errorf("Migrate on a current schema logged %q, want nothing", after)
	}
}
