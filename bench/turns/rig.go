package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/storage/sqlite"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/builtin"
)

// instantModel answers at once: the first call of a turn asks for current_time, the second
// answers. With delay set it sleeps first and never calls tools.
type instantModel struct {
	delay time.Duration
	tools bool
}

func (m instantModel) Generate(ctx context.Context, req agent.Request, onDelta func(agent.Delta) error) (agent.Response, error) {
	if m.delay > 0 {
		t := time.NewTimer(m.delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return agent.Response{}, ctx.Err()
		case <-t.C:
		}
	}
	u := echogate.Usage{Kind: echogate.UsageModel, Model: req.Model, InputTokens: 120, OutputTokens: 12}
	last := req.Messages[len(req.Messages)-1]
	if m.tools && last.Role == echogate.RoleUser {
		return agent.Response{Message: echogate.Message{Role: echogate.RoleAssistant,
			ToolCalls: []echogate.ToolCall{{ID: "call_1", Name: "current_time", Arguments: `{}`}}}, Usage: u, FinishReason: "tool_calls", Model: req.Model}, nil
	}
	for _, f := range []string{"It is ", "about ", "noon."} {
		if err := onDelta(agent.Delta{Text: f}); err != nil {
			return agent.Response{}, err
		}
	}
	return agent.Response{Message: echogate.Message{Role: echogate.RoleAssistant, Content: "It is about noon."}, Usage: u, FinishReason: "stop", Model: req.Model}, nil
}

// replier signals finished turns per event id and records when each stage was reached. It
// keeps its bookkeeping off any shared lock on the hot path (a sync.Map of waiters, atomic
// marks), so the harness does not become the bottleneck it measures.
type replier struct {
	waiters sync.Map // event id -> *waiter
	mu      sync.Mutex
	stages  [3][]time.Duration // submit→start, start→first token, last token→done
}

// waiter is one submitted event: its completion channel and stage marks (Unix nanoseconds).
type waiter struct {
	done               chan struct{}
	submit             time.Time
	start, first, last atomic.Int64
}

func (r *replier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	return echogate.MessageRef{Platform: "web", Channel: out.Conversation.Channel, ID: "m"}, nil
}

func (r *replier) ObserveTurn(ev echogate.TurnEvent) {
	v, ok := r.waiters.Load(ev.EventID)
	if !ok {
		return
	}
	w := v.(*waiter)
	now := time.Now().UnixNano()
	switch ev.Type {
	case echogate.TurnStarted:
		w.start.Store(now)
	case echogate.TurnDelta:
		w.first.CompareAndSwap(0, now)
		w.last.Store(now)
	case echogate.TurnDone:
		r.waiters.Delete(ev.EventID)
		if start, first := w.start.Load(), w.first.Load(); start != 0 && first != 0 {
			r.mu.Lock()
			r.stages[0] = append(r.stages[0], time.Duration(start-w.submit.UnixNano()))
			r.stages[1] = append(r.stages[1], time.Duration(first-start))
			r.stages[2] = append(r.stages[2], time.Duration(now-w.last.Load()))
			r.mu.Unlock()
		}
		close(w.done)
	}
}

// stageReport renders the p50/p99 of each stage.
func (r *replier) stageReport() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := ""
	for i, name := range []string{"submit→start", "start→first token", "last token→done"} {
		st := append([]time.Duration(nil), r.stages[i]...)
		sort.Slice(st, func(a, b int) bool { return st[a] < st[b] })
		out += fmt.Sprintf(" %s p50 %s p99 %s;", name, pct(st, 50), pct(st, 99))
	}
	return out
}

func (r *replier) wait(id string) chan struct{} {
	w := &waiter{done: make(chan struct{}), submit: time.Now()}
	r.waiters.Store(id, w)
	return w.done
}

type rig struct {
	p      *pipeline.Pipeline
	rep    *replier
	store  *sqlite.Store
	mem    bool   // the pipeline runs on another store than SQLite (store is idle)
	pg     *pgRig // that store, when it is PostgreSQL
	ts     *timedStore
	cancel context.CancelFunc
	done   chan struct{}
	dir    string
	seq    atomic.Int64
}

func newRig(m agent.Model, mailbox int, mem bool) (*rig, error) {
	dir, err := os.MkdirTemp("", "echogate-bench-")
	if err != nil {
		return nil, err
	}
	st, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "bench.db")}, nil)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := st.Open(ctx); err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	clock, err := builtin.NewCurrentTime(builtin.CurrentTimeConfig{})
	if err != nil {
		return nil, err
	}
	reg, err := tools.NewRegistry(clock)
	if err != nil {
		return nil, err
	}
	var store pipeline.Store = st
	var pg *pgRig
	switch {
	case mem:
		store = pipelinetest.NewMemStore()
	case pgURL != "":
		if pg, err = newPGRig(ctx, *pgLockConns); err != nil {
			return nil, err
		}
		store = pg.st
	}
	var ts *timedStore
	if *storeCalls {
		ts = &timedStore{Store: st, lat: map[string][]time.Duration{}}
		store = ts
	}
	rep := &replier{}
	p, err := pipeline.New(pipeline.Config{Model: "bench-model", MailboxSize: mailbox, TurnTimeout: time.Minute},
		pipeline.Deps{Store: store, Model: m, Tools: reg, Repliers: map[string]pipeline.Replier{"web": rep}})
	if err != nil {
		return nil, err
	}
	r := &rig{p: p, rep: rep, store: st, ts: ts, mem: mem || pg != nil, pg: pg, dir: dir, done: make(chan struct{})}
	var rctx context.Context
	rctx, r.cancel = context.WithCancel(ctx)
	go func() { defer close(r.done); _ = p.Run(rctx) }()
	<-p.Started()
	return r, nil
}

func (r *rig) close() {
	r.cancel()
	<-r.done
	r.store.Close()
	if r.pg != nil {
		r.pg.close()
	}
	os.RemoveAll(r.dir)
}

// turn submits one message and waits for its answer.
func (r *rig) turn(session string) error {
	id := fmt.Sprintf("e%d", r.seq.Add(1))
	ch := r.rep.wait(id)
	ev := echogate.InboundEvent{ID: id, Kind: echogate.KindDirect, Text: "what time is it?",
		Conversation: echogate.ConversationRef{Platform: "web", Channel: session, DM: true}, Actor: echogate.Actor{ID: "u-" + session}}
	if err := r.p.Submit(context.Background(), ev); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-time.After(time.Minute):
		return fmt.Errorf("turn %s not answered within a minute", id)
	}
}
