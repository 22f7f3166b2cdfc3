package main

import (
	"sync"
)

// stoppedChannels records the channels whose Run ended with a permanent failure (a refused
// token): one platform's failure stops that channel only, and the web console, the other
// platforms and the HTTP endpoints keep serving. Readiness reports each as not ready with its
// error, which names the fix.
type stoppedChannels struct {
	mu  sync.Mutex
	err map[string]error // channel name → the error its Run returned
}

func (s *stoppedChannels) set(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = map[string]error{}
	}
	s.err[name] = err
}

// get returns the error channel name stopped with, or nil while it runs.
func (s *stoppedChannels) get(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err[name]
}

// channelFailed is told that channel name's Run returned err before shutdown: the channel
// stays stopped until a restart, the rest keeps serving.
func (g *gateway) channelFailed(name string, err error) {
	g.stopped.set(name, err)
	g.log.Error("channel stopped after a permanent failure; the rest of the gateway keeps serving (fix it, then restart; `echogate doctor` checks the tokens)",
		"channel", name, "err", err)
}

// stoppedDetail is readiness's text for a channel stopped by err.
func stoppedDetail(err error) string {
	return "not ready: stopped after a permanent failure (fix it, then restart; `echogate doctor` checks the tokens): " + err.Error()
}
