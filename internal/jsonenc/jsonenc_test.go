package jsonenc

import (
	"encoding/json"
	"testing"
)

// AppendString(s) = json.Marshal(s), byte for byte.
func TestAppendStringIsMarshal(t *testing.T) {
	for _, s := range []string{
		"", "plain", `q"uote\back`, "<a href='x'>&amp;</a>", "\b\f\n\r\t\x00\x1f\x7f",
		"é ü 日本 🙂", "bad \xff\xfe utf8 \xc3", "line\u2028para\u2029end", "tail\x94",
	} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "<&>", "\xff", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got[1:]) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got[1:], want)
		}
	})
}
