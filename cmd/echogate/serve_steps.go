package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"

	"golang.org/x/net/netutil"
)

// The steps of gateway.serve, in the order it takes them. Each start function returns the stop
// that cancels what it started and waits for it to end; calling a stop twice is harmless.

// listen opens http.addr, capped at http.max_connections.
func (g *gateway) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", g.cfg.HTTP.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (http.addr / ECHOGATE_HTTP_ADDR): %w", g.cfg.HTTP.Addr, err)
	}
	maxConns := g.cfg.HTTP.MaxConnections
	if maxConns <= 0 {
		maxConns = defaultMaxConnections
	}
	return netutil.LimitListener(ln, maxConns), nil
}

// logServing logs the line an operator looks for at start: the console's address and what runs.
func (g *gateway) logServing(addr string) {
	names := make([]string, 0, len(g.channels))
	for _, ch := range g.channels {
		names = append(names, ch.Name())
	}
	g.log.Info("echogate serving: open "+consoleURL(addr), "addr", addr, "store", g.backend, "model", g.cfg.Models.Default,
		"demo", g.cfg.demoMode(), "channels", strings.Join(names, ","), "version", version)
}

// startReload watches for SIGHUP until stopped: reload access and agents (reload.go).
func (g *gateway) startReload(ctx context.Context) (stop func()) {
	rctx, stopReload := context.WithCancel(ctx)
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		g.watchReload(rctx)
	}()
	return func() { stopReload(); rwg.Wait() }
}

// startPipeline runs the pipeline until stopped. It does not end with ctx: serve stops it only
// after the channels have stopped (see "draining running turns").
func (g *gateway) startPipeline(ctx context.Context) (stop func()) {
	pctx, stopPipeline := context.WithCancel(context.WithoutCancel(ctx))
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		_ = g.pipeline.Run(pctx)
	}()
	return func() { stopPipeline(); pwg.Wait() }
}

// startChannels runs every channel into the pipeline until ctx ends or it is stopped. A channel
// that fails stops alone (channel_failure.go).
func (g *gateway) startChannels(ctx context.Context) (stop func()) {
	chctx, stopChannels := context.WithCancel(ctx)
	var cwg sync.WaitGroup
	for _, ch := range g.channels {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			if err := ch.Run(chctx, g.observeNames(g.pipeline.Submit)); err != nil && chctx.Err() == nil {
				g.channelFailed(ch.Name(), err) // only this channel stops (channel_failure.go)
			}
		}()
	}
	return func() { stopChannels(); cwg.Wait() }
}
