package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// replicaSet is the replicas of a chaos run: slot i holds the running process of replica i, or
// nil while it is down. The test goroutine starts and ends them; the proxy and the session
// drivers read the slots.
type replicaSet struct {
	mu    sync.Mutex
	slots []*e2eGateway
	ready []bool // the load balancer's view: the last readiness probe answered 200
	// logf, when set, is told when a running replica's probe turns from ready to not ready,
	// with its /api/ready detail (why).
	logf func(format string, args ...any)
}

// set puts g (nil: down) in slot i; a new process counts as not ready until probed.
func (rs *replicaSet) set(i int, g *e2eGateway) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.slots[i] = g
	rs.ready[i] = false
}

// base returns the address of replica i, "" while it is down.
func (rs *replicaSet) base(i int) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.slots[i] == nil {
		return ""
	}
	return rs.slots[i].base
}

// live returns the indexes of the replicas running now, other than skip (-1: none skipped).
func (rs *replicaSet) live(skip int) []int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []int
	for i, g := range rs.slots {
		if g != nil && i != skip {
			out = append(out, i)
		}
	}
	return out
}

// readyOthers returns the replicas the load balancer sends to now (their readiness answered 200),
// other than skip; when none is, the running ones.
func (rs *replicaSet) readyOthers(skip int) []int {
	rs.mu.Lock()
	var out []int
	for i, g := range rs.slots {
		if g != nil && i != skip && rs.ready[i] {
			out = append(out, i)
		}
	}
	rs.mu.Unlock()
	if len(out) == 0 {
		return rs.live(skip)
	}
	return out
}

// probe asks each running replica's /readyz once, as a load balancer's readiness check does.
func (rs *replicaSet) probe(client *http.Client) {
	for i := range rs.slots {
		b := rs.base(i)
		ok := false
		if b != "" {
			if resp, err := client.Get(b + "/readyz"); err == nil {
				ok = resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
		}
		rs.mu.Lock()
		dipped := false
		if rs.slots[i] != nil && rs.slots[i].base == b {
			dipped = rs.ready[i] && !ok
			rs.ready[i] = ok
		}
		rs.mu.Unlock()
		if dipped && rs.logf != nil {
			detail := "(no detail)"
			if resp, err := client.Get(b + "/api/ready"); err == nil {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
				resp.Body.Close()
				detail = string(body)
			}
			rs.logf("load balancer: replica %d turned not ready: %s", i, detail)
		}
	}
}

// isReady reports whether the load balancer's last probe found replica i ready.
func (rs *replicaSet) isReady(i int) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.slots[i] != nil && rs.ready[i]
}

// pick returns the next ready replica after *next (round robin), or -1.
func (rs *replicaSet) pick(next *int) (int, string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for n := 0; n < len(rs.slots); n++ {
		i := (*next + n) % len(rs.slots)
		if rs.slots[i] != nil && rs.ready[i] {
			*next = i + 1
			return i, rs.slots[i].base
		}
	}
	return -1, ""
}

// lbProxy is the load balancer in front of the replicas: round robin over the replicas whose
// readiness probe (every 100 ms) answered 200, streaming responses as they come (SSE). Like a
// Kubernetes Service it adds no forwarding headers (the replicas run without http.auth_token,
// so they serve loopback requests only). It names the replica that answered in X-Replica;
// with none ready it answers 502.
func lbProxy(t *testing.T, rs *replicaSet) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	next := 0
	stop := make(chan struct{})
	probed := make(chan struct{})
	client := &http.Client{Timeout: 2 * time.Second}
	go func() {
		defer close(probed)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			rs.probe(client)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i, base := rs.pick(&next)
		mu.Unlock()
		if i < 0 {
			http.Error(w, "no replica ready", http.StatusBadGateway)
			return
		}
		u, _ := url.Parse(base)
		p := httputil.NewSingleHostReverseProxy(u)
		p.FlushInterval = -1
		direct := p.Director
		p.Director = func(req *http.Request) {
			direct(req)
			req.Header["X-Forwarded-For"] = nil // nil: ReverseProxy adds none
		}
		p.ModifyResponse = func(resp *http.Response) error {
			resp.Header.Set("X-Replica", strconv.Itoa(i))
			return nil
		}
		p.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "replica "+strconv.Itoa(i)+": "+err.Error(), http.StatusBadGateway)
		}
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		close(stop)
		<-probed
	})
	return srv
}
