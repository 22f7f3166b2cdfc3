package web

import (
	"strconv"
	"time"

	"github.com/echogate/echogate/internal/jsonenc"
)

// appendEvent appends the JSON of w to b, byte for byte what encoding/json makes of it (HTML
// characters escaped too), without reflection or allocation. ok is false when encoding/json
// would have to be asked (a time it refuses to encode); b is then unchanged.
//
// The field list is wireEvent's and echogate.TurnEvent's, in their order; TestAppendEventFields
// fails when either type changes.
func appendEvent(b []byte, w *wireEvent) (_ []byte, ok bool) {
	if !jsonTime(w.Time) {
		return b, false
	}
	b = append(b, `{"type":`...)
	b = jsonenc.AppendString(b, string(w.Type))
	b = append(b, `,"session":`...)
	b = jsonenc.AppendString(b, string(w.Session))
	b = append(b, `,"turn":`...)
	b = jsonenc.AppendString(b, w.Turn)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, w.Seq, 10)
	b = appendOmitEmpty(b, `,"text":`, w.Text)
	b = appendOmitEmpty(b, `,"tool":`, w.Tool)
	b = appendOmitEmpty(b, `,"call_id":`, w.CallID)
	b = appendOmitEmpty(b, `,"args":`, w.Args)
	b = appendOmitEmpty(b, `,"status":`, w.Status)
	if w.IsError {
		b = append(b, `,"is_error":true`...)
	}
	b = appendOmitEmpty(b, `,"event_id":`, w.EventID)
	b = append(b, `,"time":"`...)
	b = w.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendOmitEmpty(b, `,"kind":`, w.Kind)
	b = appendOmitEmpty(b, `,"message_id":`, w.MessageID)
	b = appendOmitEmpty(b, `,"prompt_id":`, w.PromptID)
	return append(b, '}'), true
}

// jsonTime reports whether t is a time encoding/json encodes as RFC 3339 (it refuses years
// outside 0–9999 and zone offsets that are not whole minutes under a day).
func jsonTime(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off%60 == 0 && off > -24*3600 && off < 24*3600
}

func appendOmitEmpty(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return jsonenc.AppendString(append(b, key...), v)
}
