package web

import (
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

func TestMergeStored(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 12, 1, 12, 0, s, 0, time.UTC) }
	stored := []echogate.StoredMessage{
		{Seq: 1, Turn: "t1", At: at(1), Message: echogate.Message{Role: echogate.RoleUser, Content: "hi"}},
		{Seq: 2, Turn: "t1", At: at(3), Message: echogate.Message{Role: echogate.RoleAssistant, Content: "hello"}},
		{Seq: 3, Turn: "t2", At: at(5), Message: echogate.Message{Role: echogate.RoleUser, Content: "time?"}},
		{Seq: 4, Turn: "t2", At: at(6), Message: echogate.Message{Role: echogate.RoleAssistant,
			ToolCalls: []echogate.ToolCall{{ID: "c1", Name: "current_time", Arguments: `{}`}}}},
		{Seq: 5, Turn: "t2", At: at(7), Message: echogate.Message{Role: echogate.RoleTool, ToolCallID: "c1", Content: "not approved: ann denied it", IsError: true}},
		{Seq: 6, Turn: "t2", At: at(8), Message: echogate.Message{Role: echogate.RoleSystem, Content: "summary"}},
	}
	line := func(es []Entry) string {
		var out []string
		for _, e := range es {
			switch e.Role {
			case "tool":
				out = append(out, "tool "+e.Tool+" → "+e.Result)
			default:
				out = append(out, e.Role+" "+e.Text)
			}
		}
		return strings.Join(out, " | ")
	}
	for name, tt := range map[string]struct {
		live        []Entry
		livePending []Pending
		limit       int
		want        string
	}{
		"after a restart: the store only": {nil, nil, 0,
			"user hi | assistant hello | user time? | tool current_time → not approved: ann denied it"},
		"live copies of stored messages are not doubled; a notice keeps its place": {[]Entry{
			{Role: "user", Text: "hi", At: at(0)}, {Role: "assistant", Text: "hello", At: at(2)},
			{Role: "notice", Text: "⏱ note", At: at(4)}}, nil, 0,
			"user hi | assistant hello | notice ⏱ note | user time? | tool current_time → not approved: ann denied it"},
		"a running turn's messages, not stored yet, follow": {[]Entry{
			{Role: "user", Text: "next", At: at(9)}, {Role: "assistant", Text: "partial", At: at(10)}}, nil, 0,
			"user hi | assistant hello | user time? | tool current_time → not approved: ann denied it | user next | assistant partial"},
		"the limit keeps the latest": {nil, nil, 2,
			"user time? | tool current_time → not approved: ann denied it"},
		"a live pending approval learns who asked": {nil, []Pending{{CallID: "c9", Tool: "x"}}, 0,
			"user hi | assistant hello | user time? | tool current_time → not approved: ann denied it"},
	} {
		snap := Snapshot{Messages: tt.live, Pending: tt.livePending}
		got := mergeStored(snap, Stored{Messages: stored, Pending: []Pending{{CallID: "c9", Tool: "x", RequestedBy: "ann"}}}, tt.limit)
		if l := line(got.Messages); l != tt.want {
			t.Errorf("%s: mergeStored = %s, want %s", name, l, tt.want)
		}
		if len(got.Pending) != 1 || got.Pending[0].CallID+" "+got.Pending[0].RequestedBy != "c9 ann" {
			t.Errorf("%s: pending = %+v, want c9 asked by ann, once", name, got.Pending)
		}
	}
}
