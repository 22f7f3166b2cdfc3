package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/memory"
)

// memoryList prints the memories of owners (every owner when empty), current ones only unless
// all is set, at most limit.
func memoryList(ctx context.Context, e env, mem *memory.Service, owners []string, all bool, limit int) int {
	ms, err := mem.List(ctx, memrec.MemoryFilter{Owners: owners, Current: !all, Limit: limit})
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate memory list:", err)
		return 1
	}
	if len(ms) == 0 {
		fmt.Fprintln(e.stdout, "no memories")
	}
	for _, m := range ms {
		printMemory(e.stdout, m, memEmbedLabel(mem, m))
	}
	return 0
}

// memorySearch prints what user's memory recalls for the query in args, at most limit.
func memorySearch(ctx context.Context, e env, mem *memory.Service, owners []string, user string, args []string, limit int) int {
	q := strings.Join(args, " ")
	if user == "" || strings.TrimSpace(q) == "" {
		fmt.Fprintln(e.stderr, "echogate memory search: give --user and a query, e.g. echogate memory search --user slack:U123 editor")
		return 2
	}
	hits, err := mem.Recall(ctx, owners, q, limit, "", user, "")
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate memory search:", err)
		return 1
	}
	if len(hits) == 0 {
		fmt.Fprintln(e.stdout, "no memories found")
	}
	for _, h := range hits {
		printMemory(e.stdout, h.Memory, memEmbedLabel(mem, h.Memory))
	}
	return 0
}

// memoryForget forgets the one memory id in args, among owners' when owners is set.
func memoryForget(ctx context.Context, e env, mem *memory.Service, owners []string, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(e.stderr, "echogate memory forget: name one memory id (see `echogate memory list`)")
		return 2
	}
	m, err := mem.Forget(ctx, owners, args[0])
	if err != nil {
		if errors.Is(err, echogate.ErrNotFound) {
			fmt.Fprintf(e.stderr, "echogate memory forget: no memory %s (see `echogate memory list`)\n", args[0])
			return 1
		}
		fmt.Fprintln(e.stderr, "echogate memory forget:", err)
		return 1
	}
	fmt.Fprintf(e.stdout, "forgot %s: %s\n", m.ID, m.Text)
	return 0
}
