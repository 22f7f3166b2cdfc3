package web

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Finding 10: a body must arrive within the deadline (408, connection closed); a body that did
// arrive leaves its connection free of the deadline, so a response may stream for long after.
func TestBodyDeadline(t *testing.T) {
	const d = 100 * time.Millisecond
	mux := http.NewServeMux()
	mux.HandleFunc("POST /decode", func(w http.ResponseWriter, r *http.Request) {
		var v struct{ A string }
		if ReadMutation(w, r, http.MethodPost, 1<<10, &v, `"A"`) {
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("POST /stream", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select { // past the body deadline: the request must still be alive
		case <-r.Context().Done():
			return
		case <-time.After(4 * d):
		}
		_, _ = io.WriteString(w, "still streaming")
	})
	srv := httptest.NewServer(BodyDeadline(mux, d))
	defer srv.Close()

	// A slow body: headers, one byte, then nothing.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /decode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{")
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("slow body: no answer within 5s (%v), want 408 within %s", err, d)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "http.body_timeout") {
		t.Errorf("slow body = %d %s, want 408 naming http.body_timeout", resp.StatusCode, body)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the 408 the connection read %v, want it closed (EOF)", err)
	}

	// A whole body, then a long response on the same kind of connection.
	resp, err = http.Post(srv.URL+"/stream", "application/json", strings.NewReader(`{"A":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "still streaming" {
		t.Errorf("POST /stream = %d %q, want 200 \"still streaming\" after the body deadline passed", resp.StatusCode, body)
	}
	// A request without a body is not touched.
	resp, err = http.Post(srv.URL+"/decode", "application/json", strings.NewReader(`{"A":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("POST /decode with a whole body = %d, want 204", resp.StatusCode)
	}
}
