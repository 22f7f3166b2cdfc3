package pipeline

import (
	"fmt"
	"strings"
	"testing"
)

// callBlock shows every argument (up to maxPromptKeys) on its own line, each value cut on its
// own, secrets masked, and nothing an argument holds can end the block or start a line.
func TestCallBlock(t *testing.T) {
	many := "{"
	for i := range maxPromptKeys + 3 {
		many += fmt.Sprintf(`"k%02d":%d,`, i, i)
	}
	many = strings.TrimSuffix(many, ",") + "}"
	for name, tt := range map[string]struct {
		args      string
		want      []string
		notWant   []string
		wantCut   bool
		wantLines int
	}{
		"sorted keys":      {`{"b":2,"a":"x"}`, []string{"a: \"x\"\nb: 2"}, nil, false, 2},
		"padded first key": {`{"a":"` + strings.Repeat("y", 5000) + `","cmd":"rm -rf /"}`, []string{`cmd: "rm -rf /"`}, nil, true, 2},
		"fence in a value": {"{\"a\":\"```\\nfake\\n```\"}", []string{`a: "\u0060\u0060\u0060\nfake\n\u0060\u0060\u0060"`}, []string{"```"}, false, 1},
		"fence in a key":   {"{\"```\":1}", []string{`\u0060\u0060\u0060: 1`}, []string{"```"}, false, 1},
		"secret masked":    {`{"password":"hunter2"}`, []string{`password: "***"`}, []string{"hunter2"}, false, 1},
		"not an object":    {`["a","b"]`, []string{`["a","b"]`}, nil, false, 1},
		"not JSON":         {"rm -rf /\n```", []string{`"rm -rf /\n\u0060\u0060\u0060"`}, []string{"```"}, false, 1},
		"no arguments":     {`{}`, []string{"(no arguments)"}, nil, false, 1},
		"too many keys":    {many, []string{"k00: 0", "… 3 more arguments"}, []string{"k20:"}, true, maxPromptKeys + 1},
	} {
		got, cut := callBlock(tt.args)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: callBlock = %q, want it to contain %q", name, got, w)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(got, w) {
				t.Errorf("%s: callBlock = %q, want no %q", name, got, w)
			}
		}
		if (cut > 0) != tt.wantCut {
			t.Errorf("%s: callBlock cut = %d, want cut %v", name, cut, tt.wantCut)
		}
		if n := strings.Count(got, "\n") + 1; n != tt.wantLines {
			t.Errorf("%s: callBlock has %d lines, want %d", name, n, tt.wantLines)
		}
	}
}
