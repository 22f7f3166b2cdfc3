package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A failed turn's stream sends error, then done with status failed (it ended with error and no
// done). The model endpoint refuses connections, so the turn fails.
func TestE2EFailedTurnEndsWithDone(t *testing.T) {
	dead := freeAddr(t) // nothing listens there
	g := startGateway(t, map[string]string{}, "models:\n  default: m\n  providers: [{name: dead, base_url: \"http://"+dead+"/v1\", api_key: k, max_retries: -1}]\n")
	req, err := http.NewRequest(http.MethodPost, g.base+"/api/chat", strings.NewReader(`{"session":"fail","text":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var types []string
	var last struct {
		Status string `json:"status"`
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if typ, ok := strings.CutPrefix(line, "event: "); ok {
			types = append(types, typ)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && len(types) > 0 && types[len(types)-1] == "done" {
			_ = json.Unmarshal([]byte(data), &last)
		}
	}
	n := len(types)
	if n < 2 || types[n-2] != "error" || types[n-1] != "done" || last.Status != "failed" {
		t.Fatalf("events = %q, done status %q; want ... error, done with status failed", types, last.Status)
	}
}
