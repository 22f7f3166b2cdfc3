package discordtest

// Several processes identified with one token on the same shard (replicas of one bot, each on
// every shard): Discord keeps every such connection open, each its own session, and sends each
// of them every dispatch. Options.SharedShard switches the fake to that; without it a new
// connection replaces the previous one, as for a single process.

// sharedAddLocked records conn as one of the open connections. Call with s.mu held.
func (s *Server) sharedAddLocked(conn *gwConn) {
	if s.shared == nil {
		s.shared = map[*gwConn]bool{}
	}
	s.shared[conn] = true
}

// sharedDispatchLocked sends a dispatch to every connection attached to a session and returns
// the highest sequence number used (0 when none is). Call with s.mu held.
func (s *Server) sharedDispatchLocked(typ string, d any) int64 {
	var last int64
	for conn := range s.shared {
		if !conn.ready || conn.session == nil {
			continue
		}
		_ = s.dispatchLocked(conn.session, conn, typ, d)
		last = max(last, conn.session.seq)
	}
	s.notify()
	return last
}

// ReadyConnections counts the gateway connections attached to a session now: with
// SharedShard every one of them gets each dispatch; without it at most one is counted.
func (s *Server) ReadyConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.opts.SharedShard {
		if s.conn != nil && s.conn.ready {
			return 1
		}
		return 0
	}
	n := 0
	for conn := range s.shared {
		if conn.ready {
			n++
		}
	}
	return n
}
