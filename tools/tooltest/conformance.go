package tooltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/echogate/echogate/tools"
)

// Case is one call RunConformance makes with valid or invalid arguments.
type Case struct {
	Name string
	Args json.RawMessage
	// WantIsError: the call must return an IsError result and a nil error. Otherwise the call
	// must return a non-IsError result (and its Args must satisfy the tool's JSON Schema).
	WantIsError bool
	// WantAsk: the call must return an *tools.AskUserError (ask_user style tools).
	WantAsk bool
	// WantContains, if set, must occur in the result's Content (or the AskUserError's Question).
	WantContains string
	// Blocks marks a call that would not finish by itself (a server that never answers): it is
	// only run to check that cancelling ctx mid-call makes Call return context.Canceled promptly.
	Blocks bool
}

// Hang guard: how long a call may take to notice a cancelled ctx before the suite calls it hung.
// This bounds a failure, it does not measure speed.
const promptly = 5 * time.Second

// badArgs are argument payloads every tool must answer with an IsError result, never a Go error.
var badArgs = map[string]string{
	"truncated JSON":   `{"a":`,
	"not JSON":         `hello`,
	"array":            `[1,2]`,
	"string":           `"text"`,
	"number":           `42`,
	"trailing garbage": `{} {"x":1}`,
}

// RunConformance checks that tool honours the tools.Tool contract:
//   - its Spec is valid: name passes tools.ValidateName, a description, Parameters absent or a
//     valid JSON Schema (draft 2020-12) of type "object", a known Safety;
//   - malformed or non-object JSON arguments give an IsError result, not a Go error;
//   - every case gives what it wants, also when all cases run concurrently;
//   - with a cancelled ctx every call returns promptly (with a result or ctx's error), and a
//     Blocks case returns context.Canceled promptly when ctx is cancelled mid-call.
func RunConformance(t *testing.T, tool tools.Tool, cases []Case) {
	t.Helper()
	schema, err := CheckSpec(tool.Spec())
	if err != nil {
		t.Fatalf("Spec() invalid: %v", err)
	}
	t.Run("bad arguments", func(t *testing.T) {
		for name, args := range badArgs {
			if err := checkCase(context.Background(), tool, nil, Case{Name: name, Args: json.RawMessage(args), WantIsError: true}); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			if c.Blocks {
				continue
			}
			if err := checkCase(context.Background(), tool, schema, c); err != nil {
				t.Errorf("%s: %v", c.Name, err)
			}
		}
	})
	t.Run("concurrent cases", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 4*len(cases))
		for range 4 {
			for _, c := range cases {
				if c.Blocks {
					continue
				}
				wg.Go(func() {
					if err := checkCase(context.Background(), tool, schema, c); err != nil {
						errs <- fmt.Errorf("%s: %w", c.Name, err)
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
	t.Run("cancelled ctx", func(t *testing.T) {
		for _, c := range cases {
			if err := CheckCancelled(tool, c); err != nil {
				t.Errorf("%s: %v", c.Name, err)
			}
		}
	})
	t.Run("cancel mid-call", func(t *testing.T) {
		for _, c := range cases {
			if !c.Blocks {
				continue
			}
			if err := CheckCancelMidCall(tool, c); err != nil {
				t.Errorf("%s: %v", c.Name, err)
			}
		}
	})
}

// CheckSpec validates a tool's Spec and returns its compiled parameter schema (nil when
// Parameters is absent).
func CheckSpec(s tools.Spec) (*jsonschema.Schema, error) {
	if err := tools.ValidateName(s.Name); err != nil {
		return nil, err
	}
	if strings.TrimSpace(s.Description) == "" {
		return nil, fmt.Errorf("tool %q has no Description: the model needs one to choose the tool", s.Name)
	}
	if s.Safety > tools.Safe {
		return nil, fmt.Errorf("tool %q: Safety = %v, want destructive, sensitive or safe", s.Name, s.Safety)
	}
	if len(s.Parameters) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Parameters))
	if err != nil {
		return nil, fmt.Errorf("tool %q: Parameters is not JSON: %w", s.Name, err)
	}
	obj, ok := doc.(map[string]any)
	if !ok || obj["type"] != "object" {
		return nil, fmt.Errorf("tool %q: Parameters must be a JSON Schema with \"type\": \"object\", got %s", s.Name, s.Parameters)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const loc = "mem:///parameters.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("tool %q: Parameters: %w", s.Name, err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("tool %q: Parameters is not a valid JSON Schema: %w", s.Name, err)
	}
	return sch, nil
}

// checkCase runs one case with ctx and reports how the outcome differs from what it wants.
// schema, when non-nil, must accept the Args of a successful case.
func checkCase(ctx context.Context, tool tools.Tool, schema *jsonschema.Schema, c Case) error {
	if schema != nil && !c.WantIsError {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.Args))
		if err != nil {
			return fmt.Errorf("args %s are not JSON: %w", c.Args, err)
		}
		if err := schema.Validate(v); err != nil {
			return fmt.Errorf("args %s succeed but the tool's own schema rejects them: %v", c.Args, err)
		}
	}
	res, err := callGuarded(ctx, tool, c.Args)
	var ask *tools.AskUserError
	switch {
	case c.WantAsk:
		if !errors.As(err, &ask) {
			return fmt.Errorf("Call(%s) = %+v, %v, want an *tools.AskUserError", c.Args, res, err)
		}
		if !strings.Contains(ask.Question, c.WantContains) {
			return fmt.Errorf("Call(%s) asked %q, want it to contain %q", c.Args, ask.Question, c.WantContains)
		}
		return nil
	case err != nil:
		return fmt.Errorf("Call(%s) error = %v, want a Result (IsError %v) and no Go error", c.Args, err, c.WantIsError)
	case res.IsError != c.WantIsError:
		return fmt.Errorf("Call(%s) IsError = %v (content %q), want %v", c.Args, res.IsError, clip(res.Content), c.WantIsError)
	case res.IsError && strings.TrimSpace(res.Content) == "":
		return fmt.Errorf("Call(%s) returned an IsError result with no message; say what was wrong and how to fix it", c.Args)
	case !strings.Contains(res.Content, c.WantContains):
		return fmt.Errorf("Call(%s) content = %q, want it to contain %q", c.Args, clip(res.Content), c.WantContains)
	}
	return nil
}

// CheckCancelled calls tool with c.Args and an already-cancelled ctx: it must return within a
// few seconds, with a result or with ctx's error (or an AskUserError), never another error.
func CheckCancelled(tool tools.Tool, c Case) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	type out struct {
		res tools.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := callGuarded(ctx, tool, c.Args)
		done <- out{res, err}
	}()
	timer := time.NewTimer(promptly)
	defer timer.Stop()
	select {
	case o := <-done:
		var ask *tools.AskUserError
		if o.err != nil && !errors.Is(o.err, context.Canceled) && !errors.As(o.err, &ask) {
			return fmt.Errorf("Call(cancelled ctx, %s) error = %v, want nil or context.Canceled", c.Args, o.err)
		}
		return nil
	case <-timer.C:
		return fmt.Errorf("Call(cancelled ctx, %s) still running after %s, want it to return promptly", c.Args, promptly)
	}
}

// CheckCancelMidCall starts a call with c.Args, cancels ctx once the call had a moment to start
// and requires Call to return context.Canceled within a few seconds.
func CheckCancelMidCall(tool tools.Tool, c Case) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := callGuarded(ctx, tool, c.Args)
		done <- err
	}()
	// A real tool offers no hook to learn the call started; give it a short head start.
	start := time.NewTimer(50 * time.Millisecond)
	select {
	case err := <-done:
		start.Stop()
		return fmt.Errorf("Call(%s) returned %v before ctx was cancelled, want it to block (Case.Blocks)", c.Args, err)
	case <-start.C:
	}
	cancel()
	timer := time.NewTimer(promptly)
	defer timer.Stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Call(%s) after cancel: error = %v, want context.Canceled", c.Args, err)
		}
		return nil
	case <-timer.C:
		return fmt.Errorf("Call(%s) still running %s after ctx was cancelled, want it to return promptly", c.Args, promptly)
	}
}

// callGuarded turns a panic into an error so one broken tool fails its test, not the binary.
func callGuarded(ctx context.Context, tool tools.Tool, args json.RawMessage) (res tools.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("Call panicked: %v", v)
		}
	}()
	return tool.Call(ctx, args)
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
