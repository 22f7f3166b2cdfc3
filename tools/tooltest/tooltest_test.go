package tooltest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/echogate/echogate/tools"
)

func TestFakeToolScript(t *testing.T) {
	errX := errors.New("x")
	f := NewFake("f", Step{Result: tools.Result{Content: "one"}}, Step{Err: errX})
	f.Default = Step{Result: tools.Result{Content: "default"}}
	for i, want := range []struct {
		content string
		err     error
	}{{"one", nil}, {"", errX}, {"default", nil}, {"default", nil}} {
		res, err := f.Call(context.Background(), json.RawMessage(`{"n":`+string(rune('0'+i))+`}`))
		if res.Content != want.content || !errors.Is(err, want.err) {
			t.Errorf("call %d = %+v, %v, want %q, %v", i+1, res, err, want.content, want.err)
		}
	}
	if got := f.Calls(); got != 4 {
		t.Errorf("Calls() = %d, want 4", got)
	}
	if got := string(f.Args()[2]); got != `{"n":2}` {
		t.Errorf("Args()[2] = %s, want {\"n\":2}", got)
	}
}

func TestFakeToolPanicsAndHonoursCtx(t *testing.T) {
	f := NewFake("f", Step{Panic: "boom"}, Step{Gate: make(chan struct{})})
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recover() = %v, want boom", v)
			}
		}()
		f.Call(context.Background(), nil)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Call(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Call(cancelled) = %v, want context.Canceled", err)
	}
	if got := f.InFlight(); got != 0 {
		t.Errorf("InFlight() = %d, want 0", got)
	}
}

func TestFakeToolConcurrencyHighWater(t *testing.T) {
	gate := make(chan struct{})
	f := NewFake("f")
	f.Default = Step{Gate: gate}
	f.Started = make(chan int)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { f.Call(context.Background(), nil) })
	}
	for range 3 {
		<-f.Started
	}
	if got := f.InFlight(); got != 3 {
		t.Errorf("InFlight() = %d, want 3", got)
	}
	close(gate)
	wg.Wait()
	if got := f.MaxConcurrent(); got != 3 {
		t.Errorf("MaxConcurrent() = %d, want 3", got)
	}
}

func TestCheckSpec(t *testing.T) {
	for name, tt := range map[string]struct {
		spec    tools.Spec
		wantErr string
	}{
		"valid":            {tools.Spec{Name: "ok", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}, ""},
		"nil parameters":   {tools.Spec{Name: "ok", Description: "d"}, ""},
		"bad name":         {tools.Spec{Name: "a b", Description: "d"}, "may hold only"},
		"no description":   {tools.Spec{Name: "ok"}, "no Description"},
		"not an object":    {tools.Spec{Name: "ok", Description: "d", Parameters: json.RawMessage(`{"type":"string"}`)}, `"type": "object"`},
		"not JSON":         {tools.Spec{Name: "ok", Description: "d", Parameters: json.RawMessage(`{`)}, "not JSON"},
		"invalid schema":   {tools.Spec{Name: "ok", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"strin"}}}`)}, "not a valid JSON Schema"},
		"unknown safety":   {tools.Spec{Name: "ok", Description: "d", Safety: 9}, "Safety"},
		"required not arr": {tools.Spec{Name: "ok", Description: "d", Parameters: json.RawMessage(`{"type":"object","required":"a"}`)}, "not a valid JSON Schema"},
	} {
		_, err := CheckSpec(tt.spec)
		if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: CheckSpec = %v, want error containing %q", name, err, tt.wantErr)
		}
	}
}

// sloppy is a tool breaking the contract in the ways the suite must catch.
type sloppy struct {
	goErrOnBadJSON bool
	ignoreCtx      chan struct{}
}

func (s *sloppy) Spec() tools.Spec {
	return tools.Spec{Name: "sloppy", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
}

func (s *sloppy) Call(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	if s.ignoreCtx != nil {
		<-s.ignoreCtx
	}
	var v map[string]any
	if err := json.Unmarshal(args, &v); err != nil {
		if s.goErrOnBadJSON {
			return tools.Result{}, err
		}
		return tools.Errorf("bad json"), nil
	}
	return tools.Result{Content: "ok"}, nil
}

func TestCheckCaseCatchesContractBreaks(t *testing.T) {
	ctx := context.Background()
	s := &sloppy{goErrOnBadJSON: true}
	sch, err := CheckSpec(s.Spec())
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		c       Case
		wantErr string
	}{
		"go error on bad JSON":       {Case{Args: json.RawMessage(`{`), WantIsError: true}, "want a Result"},
		"success outside own schema": {Case{Args: json.RawMessage(`{"n":"x"}`)}, "schema rejects"},
		"wrong content":              {Case{Args: json.RawMessage(`{"n":1}`), WantContains: "nope"}, "want it to contain"},
		"wanted IsError":             {Case{Args: json.RawMessage(`{"n":1}`), WantIsError: true}, "IsError = false"},
		"wanted ask":                 {Case{Args: json.RawMessage(`{"n":1}`), WantAsk: true}, "AskUserError"},
		"passes":                     {Case{Args: json.RawMessage(`{"n":1}`), WantContains: "ok"}, ""},
	} {
		err := checkCase(ctx, s, sch, tt.c)
		if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: checkCase = %v, want error containing %q", name, err, tt.wantErr)
		}
	}
}

func TestCheckCancelMidCallCatchesFastTool(t *testing.T) {
	err := CheckCancelMidCall(&sloppy{}, Case{Args: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "before ctx was cancelled") {
		t.Fatalf("CheckCancelMidCall(fast tool) = %v, want 'before ctx was cancelled'", err)
	}
}

func TestRunConformanceOnFake(t *testing.T) {
	// A fake answering IsError to anything that is not a JSON object, like a real tool.
	RunConformance(t, &objectOnly{}, []Case{
		{Name: "object", Args: json.RawMessage(`{}`), WantContains: "ok"},
		{Name: "blocks", Args: json.RawMessage(`{"block":true}`), Blocks: true},
	})
}

type objectOnly struct{}

func (objectOnly) Spec() tools.Spec {
	return tools.Spec{Name: "object_only", Description: "d", Safety: tools.Safe,
		Parameters: json.RawMessage(`{"type":"object","properties":{"block":{"type":"boolean"}},"additionalProperties":false}`)}
}

func (objectOnly) Call(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	var v struct{ Block bool }
	dec := json.NewDecoder(strings.NewReader(string(args)))
	if err := dec.Decode(&v); err != nil || dec.More() {
		return tools.Errorf("arguments must be one JSON object"), nil
	}
	if _, err := dec.Token(); err == nil {
		return tools.Errorf("arguments must be one JSON object"), nil
	}
	if v.Block {
		<-ctx.Done()
		return tools.Result{}, ctx.Err()
	}
	return tools.Result{Content: "ok"}, nil
}
