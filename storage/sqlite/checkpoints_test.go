package sqlite

import (
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
