package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

type fakeMemory struct {
	saved  []memrec.Memory
	caller Caller
	ttl    time.Duration
}

func (f *fakeMemory) Remember(ctx context.Context, c Caller, text, kind string, pinned bool, ttl time.Duration) (memrec.Memory, error) {
	f.caller, f.ttl = c, ttl
	m := memrec.Memory{ID: fmt.Sprint("m_", len(f.saved)+1), Owner: memrec.UserOwner(c.UserID), Text: text, Kind: kind, Pinned: pinned}
	f.saved = append(f.saved, m)
	return m, nil
}

func (f *fakeMemory) Recall(ctx context.Context, c Caller, query string, limit int) ([]memrec.ScoredMemory, error) {
	var out []memrec.ScoredMemory
	for _, m := range f.saved {
		if m.Owner == memrec.UserOwner(c.UserID) && strings.Contains(strings.ToLower(m.Text), strings.ToLower(query)) {
			out = append(out, memrec.ScoredMemory{Memory: m})
		}
	}
	return out, nil
}

func (f *fakeMemory) Forget(ctx context.Context, c Caller, id string) (memrec.Memory, error) {
	for i, m := range f.saved {
		if m.ID == id && m.Owner == memrec.UserOwner(c.UserID) {
			f.saved = append(f.saved[:i], f.saved[i+1:]...)
			return m, nil
		}
	}
	return memrec.Memory{}, fmt.Errorf("forget %s: %w", id, echogate.ErrNotFound)
}

func TestMemoryTools(t *testing.T) {
	fm := &fakeMemory{}
	ts, err := NewMemoryTools(MemoryToolsConfig{}, fm)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, tl := range ts {
		byName[tl.Spec().Name] = i
		if !json.Valid(tl.Spec().Parameters) {
			t.Errorf("%s: parameters are not valid JSON", tl.Spec().Name)
		}
	}
	alice := WithCaller(context.Background(), Caller{UserID: "slack:U1", Session: "slack:C1", Channel: "slack:C1", Turn: "t1"})
	bob := WithCaller(context.Background(), Caller{UserID: "slack:U2"})
	call := func(ctx context.Context, name, args string) (string, bool) {
		t.Helper()
		res, err := ts[byName[name]].Call(ctx, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s(%s) = Go error %v", name, args, err)
		}
		return res.Content, res.IsError
	}
	// The cases build on each other (remember, then recall, then forget): a slice keeps the order.
	for _, tt := range []struct {
		name    string
		ctx     context.Context
		tool    string
		args    string
		want    string
		wantErr bool
	}{
		{"no caller", context.Background(), RememberName, `{"text":"x"}`, "did not say which user", true},
		{"empty text", alice, RememberName, `{"text":"  "}`, `"text" is required`, true},
		{"bad kind", alice, RememberName, `{"text":"x","kind":"opinion"}`, "fact, preference", true},
		{"bad ttl", alice, RememberName, `{"text":"x","ttl":"soon"}`, "ttl", true},
		{"unknown arg", alice, RememberName, `{"text":"x","owner":"slack:U2"}`, "unknown argument", true},
		{"remember", alice, RememberName, `{"text":"Favourite editor is Helix","kind":"preference","ttl":"2d"}`, "Saved memory m_1", false},
		{"recall", alice, RecallName, `{"query":"editor"}`, "m_1: Favourite editor is Helix", false},
		{"other user", bob, RecallName, `{"query":"editor"}`, "No memories found", false},
		{"forget foreign", bob, ForgetName, `{"id":"m_1"}`, "no memory m_1", true},
		{"forget", alice, ForgetName, `{"id":"m_1"}`, "Forgot memory m_1", false},
	} {
		name := tt.name
		got, isErr := call(tt.ctx, tt.tool, tt.args)
		if isErr != tt.wantErr || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %s(%s) = %q (error %v), want %q (error %v)", name, tt.tool, tt.args, got, isErr, tt.want, tt.wantErr)
		}
		if name == "remember" && (fm.caller.Turn != "t1" || fm.ttl != 48*time.Hour) {
			t.Errorf("remember passed caller %+v ttl %v, want turn t1 and 48h", fm.caller, fm.ttl)
		}
	}
}

type fakeKB struct{ keywordOnly bool }

func (f fakeKB) Search(ctx context.Context, q string, limit int) ([]memrec.Passage, bool, error) {
	return []memrec.Passage{{DocID: "d_1", Seq: 2, Source: "/kb/a.md", Title: "A", Heading: "Install", Text: "run make", Start: 10, End: 18}}, f.keywordOnly, nil
}

func TestKnowledgeSearchTool(t *testing.T) {
	tl, err := NewKnowledgeSearch(KnowledgeSearchConfig{}, fakeKB{keywordOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Call(context.Background(), json.RawMessage(`{"query":"install"}`))
	if err != nil || res.IsError || !strings.Contains(res.Content, "[d_1#2] A › Install (source: /kb/a.md, chunk 2, bytes 10-18)") || !strings.Contains(res.Content, "keyword search only") {
		t.Errorf("knowledge_search = %+v, %v; want the passage with its citation id and the keyword-only note", res, err)
	}
	res, _ = tl.Call(context.Background(), json.RawMessage(`{}`))
	if !res.IsError || !strings.Contains(res.Content, `"query" is required`) {
		t.Errorf("knowledge_search({}) = %+v, want an error naming query", res)
	}
}
