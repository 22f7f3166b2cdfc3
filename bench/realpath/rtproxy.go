package main

import (
	"net"
	"sync"
	"sync/atomic"
)

// rtProxy is a TCP proxy between the gateway and PostgreSQL that counts round trips: on each
// connection, a round trip begins whenever the client sends after the server last spoke (a
// pipelined batch of statements is one round trip, as it costs one wait). It also counts the
// connections it accepted.
type rtProxy struct {
	ln     net.Listener
	target string
	trips  atomic.Int64
	conns  atomic.Int64
	wg     sync.WaitGroup
}

func startRTProxy(target string) (*rtProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &rtProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *rtProxy) addr() string { return p.ln.Addr().String() }

// close stops accepting; connections in flight end with their peers.
func (p *rtProxy) close() {
	p.ln.Close()
	p.wg.Wait()
}

func (p *rtProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.conns.Add(1)
		go p.serve(c)
	}
}

func (p *rtProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	var serverSpoke atomic.Bool
	serverSpoke.Store(true)
	done := make(chan struct{}, 2)
	go func() { // client → server
		buf := make([]byte, 32<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if serverSpoke.Swap(false) {
					p.trips.Add(1)
				}
				if _, werr := s.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}()
	go func() { // server → client
		buf := make([]byte, 32<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				serverSpoke.Store(true)
				if _, werr := c.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}()
	<-done
	c.Close()
	s.Close()
	<-done
}
