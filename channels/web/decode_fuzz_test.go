package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzChatRequest feeds any body, content type and Origin through the chat API's request
// decoder (ReadMutation): no panic; a refusal is a 4xx with a message; an accepted request
// decoded into the struct.
func FuzzChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"session":"s1","user":"alice","text":"hello","id":"m1"}`, `{"text":"hi"}`, `{"session":`, `{"sesion":"x"}`,
		`{"text":"a"}{"text":"b"}`, `[]`, `"text"`, `{"text":1}`, `{"text":"\ud800"}`, "", "   ", "\x00",
	} {
		f.Add([]byte(s), "application/json", "")
	}
	f.Add([]byte(`{"text":"x"}`), "application/json; charset=utf-8", "http://example.com")
	f.Add([]byte(`text=x`), "application/x-www-form-urlencoded", "https://evil.example")
	f.Fuzz(func(t *testing.T, body []byte, ctype, origin string) {
		r := httptest.NewRequest(http.MethodPost, "http://example.com/api/chat", strings.NewReader(string(body)))
		r.Header.Set("Content-Type", ctype)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		var req chatRequest
		ok := ReadMutation(w, r, http.MethodPost, 64<<10, &req, chatFields)
		if ok {
			return
		}
		if w.Code < 400 || w.Code > 499 || !strings.Contains(w.Body.String(), `"error"`) {
			t.Fatalf("ReadMutation(%q, %q) refused with %d %q, want a 4xx JSON error", body, ctype, w.Code, w.Body.String())
		}
	})
}

// FuzzHostPolicy: any Host header is either served or refused, never a panic; the policy's own
// names are always served.
func FuzzHostPolicy(f *testing.F) {
	for _, s := range []string{"localhost:8080", "127.0.0.1", "[::1]:1", "evil.example", "", "[", "a:b:c", "chat.example.com."} {
		f.Add(s)
	}
	p, err := NewHostPolicy("127.0.0.1:8080", []string{"chat.example.com", "*.corp.example"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string) {
		_ = p.Allows(host)
		_, _ = NewHostPolicy(host, []string{host})
	})
}
