package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/storage/storagetest"
)

var _ storagetest.CheckpointStore = (*Store)(nil)

func TestCheckpoints(t *testing.T) {
	storagetest.RunCheckpoints(t, func(t *testing.T) storagetest.CheckpointStore { return openTemp(t, Config{}) })
}

func TestSaveCheckpointPrunesOldOnes(t *testing.T) {
	s := openTemp(t, Config{})
	ctx := t.Context()
	for i := range 8 {
		cp := echogate.StoredMessage{Session: "k", Seq: int64(i + 1), Message: echogate.Message{Role: echogate.RoleUser, Content: "summary"}}
		if err := s.SaveCheckpoint(ctx, cp); err != nil {
			t.Fatalf("SaveCheckpoint %d: %v", i, err)
		}
	}
	d, err := s.conns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.read(ctx, `SELECT count(*), min(covers_seq) FROM checkpoints WHERE session = ?`)
	if err != nil {
		t.Fatal(err)
	}
	var n, oldest int64
	if err := st.QueryRowContext(ctx, "k").Scan(&n, &oldest); err != nil {
		t.Fatal(err)
	}
	if n != keepCheckpoints || oldest != 8-keepCheckpoints+1 {
		t.Errorf("after 8 saves: %d checkpoints, oldest covering %d; want %d, %d", n, oldest, keepCheckpoints, 8-keepCheckpoints+1)
	}
}

// TestLatestCheckpointKnowsWhichSessionsHaveOne: sessions without checkpoints are answered
// from the index without a read, sessions with one (saved now, or found by Migrate in the
// file) are read, and a fresh store over the same file finds the saved ones.
func TestLatestCheckpointKnowsWhichSessionsHaveOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "echogate.db")
	s := openTemp(t, Config{Path: path})
	ctx := t.Context()
	cp := echogate.StoredMessage{Session: "web:long", Seq: 40, Message: echogate.Message{Role: echogate.RoleUser, Content: "summary"}}
	if err := s.SaveCheckpoint(ctx, cp); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[echogate.SessionKey]bool{"web:long": true, "web:short": false} {
		if got := !s.cps.none(key); got != want {
			t.Errorf("index knows a checkpoint of %s = %v, want %v", key, got, want)
		}
		got, err := s.LatestCheckpoint(ctx, key)
		switch {
		case want && (err != nil || got.Seq != 40):
			t.Errorf("LatestCheckpoint(%s) = %+v, %v; want seq 40", key, got, err)
		case !want && !errors.Is(err, ErrNotFound):
			t.Errorf("LatestCheckpoint(%s) = %+v, %v; want ErrNotFound", key, got, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openTemp(t, Config{Path: path})
	if again.cps.none("web:long") || !again.cps.none("web:short") {
		t.Errorf("after Migrate of the same file: none(web:long) = %v, none(web:short) = %v; want false, true",
			again.cps.none("web:long"), again.cps.none("web:short"))
	}
	if got, err := again.LatestCheckpoint(ctx, "web:long"); err != nil || got.Seq != 40 {
		t.Errorf("LatestCheckpoint(web:long) after reopening = %+v, %v; want seq 40", got, err)
	}
}

// TestCPIndexBounded: past maxCPIndex sessions the index stops answering (every call reads)
// instead of growing.
func TestCPIndexBounded(t *testing.T) {
	var c cpIndex
	c.loaded = true
	for i := range maxCPIndex + 1 {
		c.add(echogate.SessionKey(fmt.Sprintf("web:%d", i)))
	}
	if c.none("web:other") || c.known != nil {
		t.Errorf("after %d sessions: none(web:other) = %v, %d known; want false, nil", maxCPIndex+1, c.none("web:other"), len(c.known))
	}
}
