package web

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// appendEvent writes every field of wireEvent and echogate.TurnEvent: a new field must be added
// to it (and here). Detail is never sent (json:"-"): the operator's terminal reads it.
func TestAppendEventFields(t *testing.T) {
	for typ, want := range map[reflect.Type][]string{
		reflect.TypeFor[echogate.TurnEvent](): {"Type", "Session", "Turn", "Seq", "Text", "Tool", "CallID", "Args", "Status", "IsError", "EventID", "Time", "Detail"},
		reflect.TypeFor[wireEvent]():          {"TurnEvent", "Kind", "MessageID", "PromptID"},
	} {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s fields = %v, want %v: update appendEvent and this test", typ, got, want)
		}
	}
}

// appendEvent(w) = json.Marshal(w), byte for byte.
func FuzzAppendEvent(f *testing.F) {
	f.Add("delta", "web:s", "t1", int64(7), "hello <b>&</b> \"q\" \\ \n\r\t\b\f\x00\x1f\x7f", "", "", "", "", false, "e1", int64(1735732800123456789), "", "", "")
	f.Add("done", "web:s", "", int64(0), "", "tool", "call", `{"a":1}`, "paused", true, "", int64(0), "notice", "m1", "m2")
	f.Add("notice", "web:é", "t", int64(-1), "bad \xff utf8 \u2028 \u2029 é 日本 🎉", "", "", "", "", false, "", int64(-62135596800000000), "gap", "", "")
	f.Fuzz(func(t *testing.T, typ, session, turn string, seq int64, text, tool, callID, args, status string, isErr bool, eventID string, nanos int64, kind, msgID, promptID string) {
		w := wireEvent{
			TurnEvent: echogate.TurnEvent{Type: echogate.TurnEventType(typ), Session: echogate.SessionKey(session), Turn: turn, Seq: seq,
				Text: text, Tool: tool, CallID: callID, Args: args, Status: status, IsError: isErr, EventID: eventID,
				Time: time.Unix(0, nanos).In(time.FixedZone("x", 3600))},
			Kind: kind, MessageID: msgID, PromptID: promptID,
		}
		want, err := json.Marshal(w)
		got, ok := appendEvent(nil, &w)
		if err != nil || !ok {
			if ok {
				t.Fatalf("appendEvent encoded what json.Marshal refuses (%v)", err)
			}
			return
		}
		if string(got) != string(want) {
			t.Fatalf("appendEvent = %s\nwant (json.Marshal) %s", got, want)
		}
	})
}

// A time encoding/json refuses is left to it: the stream gets its error, as before.
func TestAppendEventLeavesBadTimes(t *testing.T) {
	w := wireEvent{TurnEvent: echogate.TurnEvent{Type: echogate.TurnDone, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if _, err := json.Marshal(w); err == nil {
		t.Fatal("json.Marshal of year 10000 succeeded; the fallback is untested")
	}
	if got, ok := appendEvent([]byte("x"), &w); ok || string(got) != "x" {
		t.Errorf("appendEvent(year 10000) = %q, %v; want the buffer unchanged and false", got, ok)
	}
	var sc sseScratch
	sc.enc = json.NewEncoder(&sc.buf)
	if err := sc.append(w); err == nil || sc.buf.Len() != 0 {
		t.Errorf("append(year 10000) = %v with %d bytes buffered, want an error and nothing buffered", err, sc.buf.Len())
	}
}
