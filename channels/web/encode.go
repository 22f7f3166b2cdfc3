package web

import (
	"strconv"
	"time"
	"unicode/utf8"
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
	b = appendJSONString(b, string(w.Type))
	b = append(b, `,"session":`...)
	b = appendJSONString(b, string(w.Session))
	b = append(b, `,"turn":`...)
	b = appendJSONString(b, w.Turn)
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
	return appendJSONString(append(b, key...), v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json does with HTML escaping:
// control characters, '"', '\\', '<', '>' and '&' escaped, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}
