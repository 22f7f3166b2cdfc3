package memory_test

import (
	"context"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/memory"
	"github.com/echogate/echogate/memory/memorytest"
)

// Finding 1 of issue 36: the version of a memory snapshot names its person. Two people never
// share one, in the same process or in a restarted one, written to or not.
func TestContextVersionIsPerPerson(t *testing.T) {
	mems := memorytest.New(nil)
	newService := func() *memory.Service {
		s, err := memory.New(memory.Config{}, mems, nil, nil, memory.Hooks{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	q := func(user string) echogate.ContextQuery {
		return echogate.ContextQuery{Session: "slack:C1:1.0", UserID: "slack:" + user, Channel: "slack:C1"}
	}
	first := newService()
	if _, err := first.Remember(context.Background(), memory.Note{Owner: "user:slack:UA", Text: "Passport number is X123"}); err != nil {
		t.Fatal(err)
	}
	restarted := newService()
	seen := map[uint64]string{}
	for _, tt := range []struct {
		name string
		s    *memory.Service
		user string
	}{{"UA", first, "UA"}, {"UB", first, "UB"}, {"UA after a restart", restarted, "UA"}, {"UB after a restart", restarted, "UB"}} {
		v := tt.s.ContextVersion(q(tt.user))
		if other, dup := seen[v]; dup {
			t.Errorf("ContextVersion(%s) = %d, the version of %s too; want one per person and process", tt.name, v, other)
		}
		seen[v] = tt.name
		if again := tt.s.ContextVersion(q(tt.user)); again != v {
			t.Errorf("ContextVersion(%s) = %d then %d, want a stable version while nothing is written", tt.name, v, again)
		}
	}
}
