package builtin

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeArgs feeds any tool-call arguments a model can send through the strict decoder: no
// panic; a refusal is an error result naming the tool.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{
		`{"url":"https://example.com/","max_bytes":100}`, `{}`, `null`, ``, `[]`, `"x"`, `{"url":1}`,
		`{"nope":true}`, `{"url":"a"} {}`, `{"url":"\ud800"}`, `{"max_bytes":1e999}`, strings.Repeat("[", 10000),
	} {
		f.Add([]byte(s))
	}
	type args struct {
		URL      string `json:"url"`
		MaxBytes int    `json:"max_bytes"`
		Headers  map[string]string
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var dst args
		res, ok := decodeArgs("fuzz_tool", json.RawMessage(raw), &dst, `{"url":"https://example.com/"}`)
		if !ok && (!res.IsError || !strings.Contains(res.Content, "fuzz_tool")) {
			t.Fatalf("decodeArgs(%q) refused with %+v, want an error result naming the tool", raw, res)
		}
	})
}
