package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

func cmdMigrate(ctx context.Context, e env, cfg *Config, log *slog.Logger) int {
	s, backend, err := openStore(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate migrate:", err)
		return 1
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		fmt.Fprintf(e.stderr, "echogate migrate: %s: %v\n", backend, err)
		return 1
	}
	fmt.Fprintf(e.stdout, "migrations applied (%s)\n", backend)
	return 0
}

// cmdHealthcheck asks the local gateway's /healthz; containers without curl use it.
func cmdHealthcheck(ctx context.Context, e env, cfg *Config) int {
	host, port, err := net.SplitHostPort(cfg.HTTP.Addr)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate healthcheck:", err)
		return 1
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate healthcheck:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(e.stderr, "echogate healthcheck: /healthz answered", resp.Status)
		return 1
	}
	return 0
}
