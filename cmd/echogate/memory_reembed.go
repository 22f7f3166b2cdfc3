package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/knowledge"
	"github.com/echogate/echogate/memory"
)

// memoryReembed is `echogate memory reembed`: it re-embeds every stale memory with the
// configured embedder, with a redrawn bar on a terminal (a line per batch otherwise).
func memoryReembed(ctx context.Context, e env, mem *memory.Service) int {
	_, n, err := mem.Stale(ctx, 1)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate memory reembed:", err)
		return 1
	}
	if n == 0 {
		fmt.Fprintf(e.stdout, "memory: 0 re-embedded: every current memory has a vector of %s\n", orStr(mem.EmbedModel(), "the configured embedder"))
		return 0
	}
	p := &countProgress{w: e.stderr, tty: e.isTTY, what: "memories"}
	done, err := mem.Reembed(ctx, p.update)
	p.done()
	fmt.Fprintf(e.stdout, "memory: %d re-embedded with %s\n", done, mem.EmbedModel())
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate memory reembed:", err, "(run it again to continue: memories already re-embedded are skipped)")
		return 1
	}
	return 0
}

// countProgress shows done/total of a batch job: a redrawn bar on a terminal, one line per
// update otherwise.
type countProgress struct {
	w    io.Writer
	tty  bool
	what string
	any  bool
}

func (p *countProgress) update(done, total int) {
	p.any = true
	if !p.tty {
		fmt.Fprintf(p.w, "[%d/%d] %s re-embedded\n", done, total, p.what)
		return
	}
	const width = 24
	filled := width * done / max(total, 1)
	fmt.Fprintf(p.w, "\r%s%s %d/%d %s re-embedded\x1b[K", strings.Repeat("█", filled), strings.Repeat("░", width-filled), done, total, p.what)
}

func (p *countProgress) done() {
	if p.tty && p.any {
		fmt.Fprintln(p.w)
	}
}

// memEmbedLabel labels a memory whose vector search cannot use as it is: demo embeddings (they
// hash words: no meaning) and vectors of another embedder, or none. Empty for a current vector.
func memEmbedLabel(mem *memory.Service, m memrec.Memory) string {
	var label string
	if knowledge.IsDemoEmbedModel(m.EmbedModel) {
		label = "[demo embeddings: words only, not meaning]"
	}
	if mem.IsStale(m) {
		if m.EmbedModel == "" {
			label += " (no vector of " + mem.EmbedModel() + ": run `echogate memory reembed`)"
		} else {
			label += " (stale: " + m.EmbedModel + "; run `echogate memory reembed`)"
		}
	}
	return strings.TrimSpace(label)
}

// warnStaleMemories logs, once at start, how many current memories carry another embedder's
// vectors, or none (vector search does not find them until re-embedded).
func (k *memkb) warnStaleMemories(ctx context.Context, log *slog.Logger) {
	stale, n, err := k.mem.Stale(ctx, 1)
	if err != nil || n == 0 {
		return
	}
	log.Warn(fmt.Sprintf("memory: %d memories have no vector of %s (they were embedded by another model, e.g. %q, or not at all); vector search skips them until you run `echogate memory reembed`",
		n, k.mem.EmbedModel(), orStr(stale[0].EmbedModel, "none")), "memories", n)
}
