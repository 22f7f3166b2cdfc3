package builtin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/builtin"
)

var schedNow = time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)

func newScheduleTool(t *testing.T, lim schedule.Limits) (tools.Tool, *scheduletest.MemStore, *int) {
	t.Helper()
	st := scheduletest.NewMemStore(func() time.Time { return schedNow })
	wakes := new(int)
	tool, err := builtin.NewSchedule(builtin.ScheduleConfig{Store: st, Limits: lim, Now: func() time.Time { return schedNow }, Wake: func() { *wakes++ }})
	if err != nil {
		t.Fatal(err)
	}
	return tool, st, wakes
}

func callerIn(user string, conv echogate.ConversationRef, agent string) context.Context {
	return tools.WithCaller(context.Background(), tools.Caller{UserID: user, Session: conv.SessionKey(), Channel: conv.Platform + ":" + conv.Channel,
		Turn: "t1", Conversation: conv, Agent: agent})
}

// A reminder created in a Slack thread is owned by the person who asked, delivered to that
// thread, run by that place's agent; list shows it to its owner only; cancel removes it.
func TestScheduleToolCreatesJobsWhereTheyWereAsked(t *testing.T) {
	tool, st, wakes := newScheduleTool(t, schedule.Limits{})
	thread := echogate.ConversationRef{Platform: "slack", Channel: "C1", Thread: "1700.1"}
	ctx := callerIn("slack:U1", thread, "oncall")
	res, err := tool.Call(ctx, json.RawMessage(`{"action":"create","prompt":"renew the cert","at":"in 10m"}`))
	if err != nil || res.IsError {
		t.Fatalf("create = %+v, %v; want the job created", res, err)
	}
	jobs, _ := st.ListJobs(context.Background(), "slack:U1")
	if len(jobs) != 1 {
		t.Fatalf("jobs of slack:U1 = %d, want 1", len(jobs))
	}
	j := jobs[0]
	if j.Deliver != "slack:C1/1700.1" || j.Agent != "oncall" || !j.Spec.At.Equal(schedNow.Add(10*time.Minute)) || j.Prompt != "renew the cert" || *wakes != 1 {
		t.Errorf("job = %+v (wakes %d), want delivered to slack:C1/1700.1 by oncall at now+10m, the worker woken", j, *wakes)
	}
	if !strings.Contains(res.Content, j.ID) {
		t.Errorf("create result %q does not name the job id %s", res.Content, j.ID)
	}
	other := callerIn("slack:U2", thread, "oncall")
	if res, _ := tool.Call(other, json.RawMessage(`{"action":"list"}`)); strings.Contains(res.Content, "renew") {
		t.Errorf("another person's list = %q, want no sight of U1's job", res.Content)
	}
	if res, _ := tool.Call(other, json.RawMessage(`{"action":"cancel","id":"`+j.ID+`"}`)); !res.IsError {
		t.Errorf("another person's cancel = %+v, want refused", res)
	}
	if res, _ := tool.Call(ctx, json.RawMessage(`{"action":"list"}`)); !strings.Contains(res.Content, "renew the cert") {
		t.Errorf("list = %q, want the job", res.Content)
	}
	if res, _ := tool.Call(ctx, json.RawMessage(`{"action":"cancel","id":"`+j.ID+`"}`)); res.IsError {
		t.Errorf("cancel = %+v, want done", res)
	}
	if jobs, _ := st.ListJobs(context.Background(), "slack:U1"); len(jobs) != 0 {
		t.Errorf("jobs after cancel = %d, want 0", len(jobs))
	}
}

func TestScheduleToolLimitsAndErrors(t *testing.T) {
	dm := echogate.ConversationRef{Platform: "discord", Channel: "D9", DM: true}
	for _, tt := range []struct {
		name, args string
		want       string
	}{
		{"too often", `{"action":"create","prompt":"p","every":"10m"}`, "below scheduler.min_interval 1h0m0s"},
		{"no prompt", `{"action":"create","every":"2h"}`, "prompt is empty"},
		{"bad action", `{"action":"delete"}`, `action "delete": use create, list or cancel`},
		{"two timings", `{"action":"create","prompt":"p","every":"2h","at":"in 1h"}`, "exactly one of cron, every and at"},
	} {
		tool, _, _ := newScheduleTool(t, schedule.Limits{MinInterval: time.Hour, MaxPerUser: 1})
		res, err := tool.Call(callerIn("discord:U1", dm, ""), json.RawMessage(tt.args))
		if err != nil || !res.IsError || !strings.Contains(res.Content, tt.want) {
			t.Errorf("%s: Call = %+v, %v; want an error result containing %q", tt.name, res, err, tt.want)
		}
	}
	tool, _, _ := newScheduleTool(t, schedule.Limits{MaxPerUser: 1})
	ctx := callerIn("discord:U1", dm, "")
	if res, _ := tool.Call(ctx, json.RawMessage(`{"action":"create","prompt":"a","every":"2h"}`)); res.IsError {
		t.Fatalf("first create = %+v", res)
	}
	if res, _ := tool.Call(ctx, json.RawMessage(`{"action":"create","prompt":"b","every":"2h"}`)); !res.IsError || !strings.Contains(res.Content, "scheduler.max_per_user") {
		t.Errorf("second create = %+v, want refused naming scheduler.max_per_user", res)
	}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"action":"list"}`)); err == nil {
		t.Error("a call without a caller = nil error, want one (the tool acts only for a person)")
	}
}

// The approval gate sees a recurring job as sensitive and a one-shot reminder as safe.
func TestScheduleToolSafetyPerCall(t *testing.T) {
	tool, _, _ := newScheduleTool(t, schedule.Limits{})
	spec := tool.Spec()
	if spec.SafetyOf == nil {
		t.Fatal("Spec().SafetyOf = nil, want the per-call safety")
	}
	for args, want := range map[string]tools.Safety{
		`{"action":"create","prompt":"p","at":"in 1h"}`:       tools.Safe,
		`{"action":"create","prompt":"p","every":"2h"}`:       tools.Sensitive,
		`{"action":"create","prompt":"p","cron":"0 9 * * *"}`: tools.Sensitive,
		`{"action":"list"}`:            tools.Safe,
		`{"action":"cancel","id":"x"}`: tools.Safe,
		`not json`:                     tools.Sensitive,
	} {
		if got := spec.SafetyOf(json.RawMessage(args)); got != want {
			t.Errorf("SafetyOf(%s) = %v, want %v", args, got, want)
		}
	}
}
