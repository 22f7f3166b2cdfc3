package mcp

import (
	"encoding/json"
	"testing"
)

// FuzzObjectArgs feeds any tool-call arguments through the check before an MCP call: no panic,
// and what it accepts is one JSON object.
func FuzzObjectArgs(f *testing.F) {
	for _, s := range []string{`{"a":1}`, ``, `null`, `[]`, `{"a":`, ` {"b":[1,2]} `, `{}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := objectArgs(json.RawMessage(raw))
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) != nil {
			t.Fatalf("objectArgs(%q) = %q, accepted but not a JSON object", raw, out)
		}
	})
}
