package pipeline

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParseAnswer: a typed answer is read against the question's form: keywords, one field's
// value, name: value pairs, JSON; the values converted to the fields' types; what does not fit
// says what to fix.
func TestParseAnswer(t *testing.T) {
	one, err := parseForm(json.RawMessage(`{"type":"object","properties":{"size":{"type":"string","enum":["small","large"]}},"required":["size"]}`))
	if err != nil {
		t.Fatal(err)
	}
	many, err := parseForm(json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","default":"Ada"},"count":{"type":"integer"},"ok":{"type":"boolean"},"ratio":{"type":"number"}},"required":["count"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f          form
		text, want string // want: the reply as JSON, or "error: <part of the message>"
	}{
		{one, "Large", `{"Action":"accept","Content":{"size":"large"}}`},
		{one, "size: small", `{"Action":"accept","Content":{"size":"small"}}`},
		{one, "medium", "error: not one of small, large"},
		{one, "decline", `{"Action":"decline","Content":null}`},
		{one, "cancel", `{"Action":"cancel","Content":null}`},
		{one, "accept", "error: size has no default"},
		{many, "count: 3\nok: yes\nratio=0.5", `{"Action":"accept","Content":{"count":3,"ok":true,"ratio":0.5}}`},
		{many, "count: 3; name: Grace", `{"Action":"accept","Content":{"count":3,"name":"Grace"}}`},
		{many, `{"count": 2, "ok": false}`, `{"Action":"accept","Content":{"count":2,"ok":false}}`},
		{many, "name: Grace", "error: count is required"},
		{many, "count: three", `error: count: "three" is not a whole number`},
		{many, "colour: red", `error: no field "colour"`},
		{many, "just words", "error: is not `name: value`"},
		{form{}, "accept", `{"Action":"accept","Content":{}}`},
		{form{}, "sure", "error: answer accept or decline"},
	} {
		r, err := tc.f.parseAnswer(tc.text)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			b, _ := json.Marshal(r)
			got = string(b)
		}
		if strings.HasPrefix(tc.want, "error: ") && !strings.Contains(got, strings.TrimPrefix(tc.want, "error: ")) || !strings.HasPrefix(tc.want, "error: ") && got != tc.want {
			t.Errorf("parseAnswer(%q) = %s, want %s", tc.text, got, tc.want)
		}
	}
}

// TestParseFormRefuses: schemas a chat question cannot take are refused naming why.
func TestParseFormRefuses(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"array"}`: `type "array"`,
		`{"type":"object","properties":{"tags":{"type":"array"}}}`:             `field "tags" has type "array"`,
		`{"type":"object","properties":{"n":{"type":"integer","enum":[1,2]}}}`: "not a string",
		`not json`: "not a JSON object schema",
	} {
		if _, err := parseForm(json.RawMessage(schema)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseForm(%s) = %v, want an error naming %q", schema, err, want)
		}
	}
}
