package discordtest

import (
	"net/http"
	"strings"
)

// hold is one HoldREST rule: requests it matches wait until release is closed.
type hold struct {
	method, path string
	release      chan struct{}
	waiting      int // requests held now
	seen         int // requests it has held so far
}

// HoldREST makes every later REST request with this method whose path (without the /api/vN
// prefix) starts with path wait before it is answered, until the returned release is called,
// the client gives up, or Close. It stands for a slow Discord: tests block a read on it and
// observe what the client does meanwhile. Held reports how many requests are waiting.
func (s *Server) HoldREST(method, path string) (release func()) {
	h := &hold{method: method, path: path, release: make(chan struct{})}
	s.mu.Lock()
	s.holds = append(s.holds, h)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.holds {
			if x == h {
				s.holds = append(s.holds[:i], s.holds[i+1:]...)
				close(h.release)
				break
			}
		}
	}
}

// Held reports how many REST requests the HoldREST rules hold now.
func (s *Server) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.holds {
		n += h.waiting
	}
	return n
}

// waitHold blocks r while a HoldREST rule matches it; false when the client went away.
func (s *Server) waitHold(r *http.Request, path string) bool {
	s.mu.Lock()
	var h *hold
	for _, x := range s.holds {
		if x.method == r.Method && strings.HasPrefix(path, x.path) {
			h = x
			break
		}
	}
	if h == nil {
		s.mu.Unlock()
		return true
	}
	h.waiting++
	h.seen++
	s.notify()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		h.waiting--
		s.notify()
		s.mu.Unlock()
	}()
	select {
	case <-h.release:
		return true
	case <-r.Context().Done():
		return false
	}
}

// releaseHolds lets every held request go (Close).
func (s *Server) releaseHolds() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.holds {
		close(h.release)
	}
	s.holds = nil
}
