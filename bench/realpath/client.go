package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// newClient is the load generator's HTTP client: keep-alive connections for every session.
func newClient(conns int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if modelRoots != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: modelRoots}
	}
	tr.MaxIdleConns = conns + 16
	tr.MaxIdleConnsPerHost = conns + 16
	tr.DisableCompression = true
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// modelRoots trusts the model server's certificate (-model-tls); nil for plain HTTP.
var modelRoots *x509.CertPool

// trustModel makes the benchmark's clients trust the certificate in certFile.
func trustModel(certFile string) error {
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return fmt.Errorf("model server certificate %s: no certificate in it", certFile)
	}
	modelRoots = pool
	return nil
}

// chatTurn posts one message to POST /api/chat and reads the SSE stream to its done event. It
// returns the turn's latency (request sent → done received) and the done event's status.
func chatTurn(ctx context.Context, c *http.Client, base, session, text string) (time.Duration, error) {
	body, _ := json.Marshal(map[string]string{"session": session, "user": "bench", "text": text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/chat", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return 0, fmt.Errorf("POST /api/chat: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	br := bufio.NewReaderSize(resp.Body, 4<<10)
	done := false
	var took time.Duration
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			switch {
			case bytes.HasPrefix(line, []byte("event: done")):
				done, took = true, time.Since(start)
			case done && bytes.HasPrefix(line, []byte("data: ")):
				var d struct {
					Status string `json:"status"`
					Error  string `json:"error"`
				}
				_ = json.Unmarshal(bytes.TrimPrefix(line, []byte("data: ")), &d)
				if d.Status != "" && d.Status != "done" {
					return took, fmt.Errorf("turn ended %s: %s", d.Status, line)
				}
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			break
		}
	}
	if !done {
		return 0, fmt.Errorf("POST /api/chat: stream ended without a done event")
	}
	return took, nil
}

// directCall streams one chat completion straight from the model server, the way the gateway's
// client asks for it, and returns its latency (request sent → [DONE]).
func directCall(ctx context.Context, c *http.Client, modelURL, text string) (time.Duration, error) {
	body, _ := json.Marshal(map[string]any{
		"model": "gpt-4o-mini", "stream": true, "stream_options": map[string]bool{"include_usage": true},
		"messages": []map[string]string{{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": text}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, modelURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-bench")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, []byte("data: [DONE]")) {
			took := time.Since(start)
			_, _ = io.Copy(io.Discard, br)
			return took, nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return 0, fmt.Errorf("model stream ended without [DONE]: %v", err)
		}
	}
}
