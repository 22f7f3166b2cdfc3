package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/tooltest"
)

var fixedNow = time.Date(2026, 3, 1, 13, 4, 5, 0, time.UTC) // a Sunday

func newCurrentTime(t *testing.T, cfg CurrentTimeConfig) tools.Tool {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return fixedNow }
	}
	tool, err := NewCurrentTime(cfg)
	if err != nil {
		t.Fatalf("NewCurrentTime(%+v) = %v", cfg, err)
	}
	return tool
}

func TestCurrentTime(t *testing.T) {
	tool := newCurrentTime(t, CurrentTimeConfig{})
	for name, tt := range map[string]struct {
		args    string
		want    string
		wantErr bool
	}{
		"default UTC": {`{}`, `{"time":"2026-03-01T13:04:05Z","weekday":"Sunday","timezone":"UTC","abbreviation":"UTC","utc_offset":"+00:00","unix":1772370245}`, false},
		"empty args":  {``, `"timezone":"UTC"`, false},
		"null args":   {`null`, `"timezone":"UTC"`, false},
		"berlin":      {`{"timezone":"Europe/Berlin"}`, `{"time":"2026-03-01T14:04:05+01:00","weekday":"Sunday","timezone":"Europe/Berlin","abbreviation":"CET","utc_offset":"+01:00","unix":1772370245}`, false},
		"new york":    {`{"timezone":"America/New_York"}`, `"time":"2026-03-01T08:04:05-05:00"`, false},
		"half hour":   {`{"timezone":"Asia/Kolkata"}`, `"utc_offset":"+05:30"`, false},
		"negative":    {`{"timezone":"America/St_Johns"}`, `"utc_offset":"-03:30"`, false},
		"date line":   {`{"timezone":"Pacific/Kiritimati"}`, `"weekday":"Monday"`, false},
		"unknown":     {`{"timezone":"Mars/Olympus"}`, `unknown time zone "Mars/Olympus": use an IANA zone name such as "Europe/Berlin"`, true},
		"city only":   {`{"timezone":"Berlin"}`, `unknown time zone "Berlin"`, true},
		"Local":       {`{"timezone":"Local"}`, `unknown time zone "Local"`, true},
		"empty zone":  {`{"timezone":""}`, `unknown time zone ""`, true},
		"path":        {`{"timezone":"../../etc/passwd"}`, `unknown time zone`, true},
		"wrong type":  {`{"timezone":1}`, `argument "timezone" must be a string, got a JSON number`, true},
		"unknown arg": {`{"tz":"UTC"}`, `unknown argument "tz"; allowed arguments: timezone`, true},
		"not object":  {`["UTC"]`, `arguments must be a JSON object`, true},
		"bad JSON":    {`{"timezone":`, `arguments are not valid JSON`, true},
	} {
		res, err := tool.Call(context.Background(), json.RawMessage(tt.args))
		if err != nil || res.IsError != tt.wantErr || !strings.Contains(res.Content, tt.want) {
			t.Errorf("%s: Call(%s) = %+v, %v, want IsError %v containing %q", name, tt.args, res, err, tt.wantErr, tt.want)
		}
	}
}

func TestCurrentTimeConfig(t *testing.T) {
	tool := newCurrentTime(t, CurrentTimeConfig{DefaultTimezone: "Asia/Tokyo"})
	res, err := tool.Call(context.Background(), nil)
	if err != nil || !strings.Contains(res.Content, `"time":"2026-03-01T22:04:05+09:00"`) {
		t.Errorf("Call() with default Asia/Tokyo = %+v, %v, want 22:04:05+09:00", res, err)
	}
	if _, err := NewCurrentTime(CurrentTimeConfig{DefaultTimezone: "Nowhere/City"}); err == nil || !strings.Contains(err.Error(), `"Nowhere/City"`) {
		t.Errorf("NewCurrentTime(bad zone) = %v, want an error naming the zone", err)
	}
}

func TestCurrentTimeConformance(t *testing.T) {
	tooltest.RunConformance(t, newCurrentTime(t, CurrentTimeConfig{}), []tooltest.Case{
		{Name: "no zone", Args: json.RawMessage(`{}`), WantContains: "2026-03-01T13:04:05Z"},
		{Name: "zone", Args: json.RawMessage(`{"timezone":"Europe/Berlin"}`), WantContains: "+01:00"},
		{Name: "bad zone", Args: json.RawMessage(`{"timezone":"Nope/Nope"}`), WantIsError: true},
		{Name: "unknown field", Args: json.RawMessage(`{"zone":"UTC"}`), WantIsError: true},
	})
}

func TestAskUser(t *testing.T) {
	tool, err := NewAskUser(AskUserConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		args     string
		wantQ    string
		wantFail string
	}{
		"question":   {`{"question":"  Which city?  "}`, "Which city?", ""},
		"empty":      {`{"question":"   "}`, "", `"question" is required`},
		"missing":    {`{}`, "", `"question" is required`},
		"wrong type": {`{"question":["a"]}`, "", `argument "question" must be a string`},
		"unknown":    {`{"question":"q","choices":[]}`, "", `unknown argument "choices"`},
		"too long":   {`{"question":"` + strings.Repeat("é", maxQuestion+1) + `"}`, "", "the limit is 2000"},
	} {
		res, err := tool.Call(context.Background(), json.RawMessage(tt.args))
		var ask *tools.AskUserError
		if tt.wantQ != "" {
			if !errors.As(err, &ask) || ask.Question != tt.wantQ {
				t.Errorf("%s: Call = %+v, %v, want AskUserError %q", name, res, err, tt.wantQ)
			}
			continue
		}
		if err != nil || !res.IsError || !strings.Contains(res.Content, tt.wantFail) {
			t.Errorf("%s: Call = %+v, %v, want IsError containing %q", name, res, err, tt.wantFail)
		}
	}
	tooltest.RunConformance(t, tool, []tooltest.Case{
		{Name: "asks", Args: json.RawMessage(`{"question":"Which city?"}`), WantAsk: true, WantContains: "Which city?"},
		{Name: "empty", Args: json.RawMessage(`{"question":""}`), WantIsError: true},
	})
}

// BenchmarkCurrentTime is the call the model makes most, without arguments.
func BenchmarkCurrentTime(b *testing.B) {
	tool, err := NewCurrentTime(CurrentTimeConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, args := context.Background(), json.RawMessage(`{}`)
	b.ReportAllocs()
	for b.Loop() {
		if res, err := tool.Call(ctx, args); err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}
