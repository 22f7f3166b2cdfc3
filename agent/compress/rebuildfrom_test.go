package compress

import (
	"context"
	"errors"
	"testing"

	"github.com/echogate/echogate"
)

// TestRebuildFromTheCallersCheckpoint: RebuildFrom rebuilds as Rebuild does from the
// checkpoint the caller read with LoadCheckpoint, without reading the store again.
func TestRebuildFromTheCallersCheckpoint(t *testing.T) {
	hist := stored(testSession, conversation(5)) // seq 1..10
	cp := func(seq int64) echogate.StoredMessage {
		return echogate.StoredMessage{Session: testSession, Seq: seq, Message: echogate.Message{Role: echogate.RoleUser, Content: CheckpointTitle + "\n\nsummary"}}
	}
	for name, tt := range map[string]struct {
		saved    []echogate.StoredMessage
		loadErr  error
		wantHead int
		wantFrom int64
	}{
		"no checkpoint": {nil, nil, 0, 1},
		"read failed":   {[]echogate.StoredMessage{cp(4)}, errors.New("db down"), 0, 1},
		"checkpoint":    {[]echogate.StoredMessage{cp(4)}, nil, 2, 5},
		"stale":         {[]echogate.StoredMessage{cp(10)}, nil, 0, 1},
	} {
		c, _, mem := newTestCompressor(t, Config{})
		mem.saved, mem.loadErr = tt.saved, tt.loadErr
		store := &countingCheckpoints{memCheckpoints: mem}
		c.store = store
		got, err := c.LoadCheckpoint(context.Background(), testSession)
		head, rest := c.RebuildFrom(context.Background(), testSession, hist, got, err)
		if len(head) != tt.wantHead || len(rest) == 0 || rest[0].Seq != tt.wantFrom {
			t.Errorf("%s: RebuildFrom = %d head messages, rest from seq %v, want %d, from %d", name, len(head), firstSeq(rest), tt.wantHead, tt.wantFrom)
		}
		if store.reads != 1 {
			t.Errorf("%s: store reads = %d, want 1 (LoadCheckpoint's alone)", name, store.reads)
		}
	}
}

func firstSeq(m []echogate.StoredMessage) any {
	if len(m) == 0 {
		return "none"
	}
	return m[0].Seq
}
