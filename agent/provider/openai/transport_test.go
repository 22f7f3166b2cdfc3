package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/echogate/echogate/agent"
)

// The default client's connection buffers are small (connReadBuffer, connWriteBuffer): a
// request body, a response head and a chunk each far larger than them still go through whole.
func TestGenerateThroughSmallConnectionBuffers(t *testing.T) {
	prompt := strings.Repeat("a long prompt ", 3000) // ~42 KB of body
	answer := strings.Repeat("an answer longer than every buffer ", 1000)
	long := strings.Repeat("v", 6000) // one header line of 6 KB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil || len(req.Messages) != 1 || req.Messages[0].Content != prompt {
			http.Error(w, fmt.Sprintf("the request's prompt did not arrive whole (%d bytes of body, %v)", len(b), err), http.StatusBadRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("X-Long-Header", long)
		for i := range 40 {
			h.Set(fmt.Sprintf("X-Ratelimit-Detail-%d", i), "remaining=9999;reset=6ms")
		}
		chunk := func(delta, finish string) string {
			c := map[string]any{"id": "x", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
				"choices": []map[string]any{{"index": 0, "delta": map[string]string{"content": delta}}}}
			if finish != "" {
				c["choices"].([]map[string]any)[0]["finish_reason"] = finish
			}
			out, _ := json.Marshal(c)
			return "data: " + string(out) + "\n\n"
		}
		fmt.Fprint(w, chunk(answer, ""), chunk("", "stop"), "data: [DONE]\n\n")
	}))
	defer srv.Close()
	p, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: testKey, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := p.doer.c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("default transport = %T, want *http.Transport", p.doer.c.Transport)
	}
	if tr.ReadBufferSize != connReadBuffer || tr.WriteBufferSize != connWriteBuffer {
		t.Errorf("default transport's buffers = %d/%d, want %d/%d", tr.ReadBufferSize, tr.WriteBufferSize, connReadBuffer, connWriteBuffer)
	}
	for i := range 2 { // the second call reuses the connection
		req := agent.Request{Model: "gpt-4o-mini", Messages: userReq(prompt).Messages}
		resp, err := p.Generate(context.Background(), req, nil)
		if err != nil {
			t.Fatalf("call %d: Generate = %v, want nil", i, err)
		}
		if resp.Message.Content != answer {
			t.Errorf("call %d: answer = %d bytes, want the %d sent", i, len(resp.Message.Content), len(answer))
		}
	}
}

// Against an HTTPS endpoint (OpenAI's, and most providers') the default client speaks HTTP/2,
// its dialer wrapper (copyConn) notwithstanding: concurrent turns share a few connections
// instead of holding one each, with its buffers and two goroutines.
func TestGenerateSpeaksHTTP2OverTLS(t *testing.T) {
	var (
		mu     sync.Mutex
		protos []string
		addrs  = map[string]bool{}
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		protos = append(protos, r.Proto)
		addrs[r.RemoteAddr] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	p, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: testKey, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := p.doer.c.Transport.(*http.Transport)
	tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone() // trust the test certificate
	// The first call opens the connection; the concurrent ones that follow share it.
	if _, err := p.Generate(context.Background(), userReq("hi"), nil); err != nil {
		t.Fatalf("Generate = %v", err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := p.Generate(context.Background(), userReq("hi"), nil); err != nil || resp.Message.Content != "ok" {
				t.Errorf("Generate = %q, %v, want ok", resp.Message.Content, err)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i, proto := range protos {
		if proto != "HTTP/2.0" {
			t.Errorf("request %d came as %s, want HTTP/2.0", i, proto)
		}
	}
	if len(addrs) != 1 {
		t.Errorf("9 calls came over %d connections, want them all on one", len(addrs))
	}
}
