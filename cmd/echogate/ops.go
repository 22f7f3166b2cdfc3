package main

import (
	"context"
	"fmt"
	"log/slog"
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

func cmdKnowledge(ctx context.Context, e env, cfg *Config, log *slog.Logger, args []string) int {
	fmt.Fprintln(e.stderr, "echogate knowledge: the knowledge base is not part of this build yet")
	return 2
}

func cmdMemory(ctx context.Context, e env, cfg *Config, log *slog.Logger, args []string) int {
	fmt.Fprintln(e.stderr, "echogate memory: long-term memory is not part of this build yet")
	return 2
}
