package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/pipeline/pipelinetest"
)

func TestPendingIndex(t *testing.T) {
	ctx := context.Background()
	st := pipelinetest.NewMemStore()
	var x pendingIndex
	if !x.mayHave("web:a") {
		t.Fatal("an index not loaded yet must send every event to the store")
	}
	if err := st.SavePending(ctx, echogate.PendingTurn{Session: "web:paused", Turn: "t1", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := x.load(ctx, st); err != nil {
		t.Fatal(err)
	}
	if !x.mayHave("web:paused") || x.mayHave("web:a") {
		t.Errorf("after load: mayHave(paused) = %v, mayHave(a) = %v; want true, false", x.mayHave("web:paused"), x.mayHave("web:a"))
	}
	x.add("web:a")
	x.remove("web:paused")
	if !x.mayHave("web:a") || x.mayHave("web:paused") {
		t.Errorf("after add(a), remove(paused): %v, %v; want true, false", x.mayHave("web:a"), x.mayHave("web:paused"))
	}
}
