package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// contextRules are the context calls the pipeline's non-test sources may not make, and where
// they may all the same, with the reason. A turn's context carries its span and logger and
// is bounded: what must outlive a stop derives from it with context.WithoutCancel plus a
// timeout of its own. Per-turn values are Turn (or turnCtl) fields, not context values.
var contextRules = []struct {
	call    string
	bounded bool              // allowed on a line that also bounds it (WithTimeout, WithDeadline)
	allow   map[string]string // file → why
}{
	{call: "context.Background()"},
	{call: "context.TODO()"},
	{call: "context.WithValue("},
	{call: "context.WithoutCancel(", bounded: true, allow: map[string]string{
		"dispatcher.go": "the pipeline's base context, cancelled by Run's shutdown",
		"start.go":      "the base of the turn's start writes; each write adds stageTimeout",
	}},
}

// TestNoDetachedContextsOrContextValuesOnTurnPaths reads the package's non-test sources: no
// turn path starts from context.Background() or context.TODO(), what outlives a stop
// (context.WithoutCancel) has a bound of its own, and no per-turn value travels as a context
// value.
func TestNoDetachedContextsOrContextValuesOnTurnPaths(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			code, _, _ := strings.Cut(line, "//")
			for _, r := range contextRules {
				if !strings.Contains(code, r.call) {
					continue
				}
				if r.bounded && (strings.Contains(code, "context.WithTimeout(") || strings.Contains(code, "context.WithDeadline(")) {
					continue
				}
				if _, ok := r.allow[f]; !ok {
					t.Errorf("%s:%d uses %s: derive from the turn's context (context.WithoutCancel plus a timeout on the same line) "+
						"and keep per-turn values in Turn fields; or add the file to contextRules with a reason", f, i+1, r.call)
				}
			}
		}
	}
}

type runKey struct{}

// ctxStreamer records the context each stream is started with.
type ctxStreamer struct {
	pipelinetest.StreamingReplier
	ctxs chan context.Context
}

func (s ctxStreamer) StartStream(ctx context.Context, out echogate.Outbound) (echogate.Stream, error) {
	s.ctxs <- ctx
	return s.StreamingReplier.StartStream(ctx, out)
}

// TestStreamContextDerivesFromTheTurn: the stream a turn's answer goes into outlives a stop,
// but it runs on the turn's context without its cancellation, not on a fresh one: the values
// of the pipeline's context reach it (span, logger), it has a deadline, and it ends with the
// turn.
func TestStreamContextDerivesFromTheTurn(t *testing.T) {
	rep := pipelinetest.NewReplier(echogate.PlatformWeb)
	str := ctxStreamer{StreamingReplier: pipelinetest.StreamingReplier{Replier: rep}, ctxs: make(chan context.Context, 4)}
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{}, Deps{Store: pipelinetest.NewMemStore(), Model: agenttest.NewScriptedModel(agenttest.Reply("hello")),
		Tools: reg, Repliers: map[string]Replier{echogate.PlatformWeb: str}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), runKey{}, "run"))
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-p.Started()
	ev := echogate.InboundEvent{ID: "ev1", Kind: echogate.KindDirect, Text: "hi", Actor: echogate.Actor{ID: "u"},
		Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: "s1", DM: true}}
	if err := p.Submit(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rep.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not finish within 10s")
	}
	var sctx context.Context
	select {
	case sctx = <-str.ctxs:
	default:
		t.Fatal("the answer was not streamed")
	}
	if v := sctx.Value(runKey{}); v != "run" {
		t.Errorf("stream context value = %v, want the pipeline context's %q (it must derive from the turn's)", v, "run")
	}
	if _, ok := sctx.Deadline(); !ok {
		t.Error("stream context has no deadline, want the turn's longest life as its bound")
	}
	deadline := time.After(10 * time.Second)
	for sctx.Err() == nil { // the turn's goroutine ends the context right after the done event
		select {
		case <-sctx.Done():
		case <-deadline:
			t.Fatal("stream context still live 10s after the turn ended, want it ended with the turn")
		}
	}
}
