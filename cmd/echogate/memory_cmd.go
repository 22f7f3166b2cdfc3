package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/knowledge"
)

const knowledgeUsage = `usage: echogate knowledge <command>
  add PATH…            ingest Markdown, text, HTML and PDF files and folders (unchanged files are skipped)
  search [--limit N] QUERY   hybrid search; prints passages with citation ids
  list                 list the documents
  rm ID|PATH           remove a document and its passages
  reembed              re-embed the documents whose vectors came from another embedding model`

const memoryUsage = `usage: echogate memory <command>
  list [--user U] [--all] [--limit N]   list memories (current ones unless --all), e.g. --user slack:U123
  search --user U QUERY                 search a user's memories
  forget ID                             delete one memory
  reembed                               re-embed the memories whose vectors came from another embedding model`

// openMemKB opens the store and builds memory and knowledge for a CLI command (no chat model:
// consolidation does not run here).
func openMemKB(ctx context.Context, cfg *Config, log *slog.Logger) (*memkb, func(), error) {
	st, backend, err := openStore(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("migrate %s store: %w", backend, err)
	}
	k, err := newMemKB(ctx, cfg, memkbDeps{store: st, log: log, pricer: newPricer(cfg.Models.Prices), record: recordBackground(st, log)})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return k, func() { st.Close() }, nil
}

// knowledgeCmds are the knowledge subcommands; each runs on an open knowledge base.
var knowledgeCmds = map[string]func(ctx context.Context, e env, cfg *Config, kb *knowledge.Service, args []string) int{
	"add":     knowledgeAdd,
	"reembed": knowledgeReembed,
	"search":  knowledgeSearch,
	"list":    knowledgeList,
	"rm":      knowledgeRm,
}

func cmdKnowledge(ctx context.Context, e env, cfg *Config, log *slog.Logger, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(e.stderr, knowledgeUsage)
		return 2
	}
	sub, rest := args[0], args[1:]
	run, ok := knowledgeCmds[sub]
	if !ok {
		fmt.Fprintf(e.stderr, "echogate knowledge: unknown command %q\n%s\n", sub, knowledgeUsage)
		return 2
	}
	if !optIn(cfg.Knowledge.Enabled) {
		fmt.Fprintln(e.stderr, "echogate knowledge: the knowledge base is off: set knowledge.enabled: true (or ECHOGATE_KNOWLEDGE_ENABLED=true)")
		return 1
	}
	k, closeFn, err := openMemKB(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate knowledge:", err)
		return 1
	}
	defer closeFn()
	return run(ctx, e, cfg, k.kb, rest)
}

func knowledgeAdd(ctx context.Context, e env, _ *Config, kb *knowledge.Service, rest []string) int {
	if len(rest) == 0 {
		fmt.Fprintln(e.stderr, "echogate knowledge add: name at least one file or folder\n"+knowledgeUsage)
		return 2
	}
	p := newProgress(e.stderr, e.isTTY)
	rep, err := kb.Ingest(ctx, rest, p.update)
	p.done()
	if err != nil && !p.any && len(rep.Skipped) == 0 { // refused before any file (a missing path): no summary
		fmt.Fprintln(e.stderr, "echogate knowledge add:", err)
		return 1
	}
	printReport(e.stdout, rep)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate knowledge add:", err)
		return 1
	}
	return 0
}

func knowledgeReembed(ctx context.Context, e env, _ *Config, kb *knowledge.Service, _ []string) int {
	p := newProgress(e.stderr, e.isTTY)
	rep, err := kb.Reembed(ctx, p.update)
	p.done()
	printReport(e.stdout, rep)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate knowledge reembed:", err, "(remove documents whose files are gone with `echogate knowledge rm ID`)")
		return 1
	}
	return 0
}

func knowledgeSearch(ctx context.Context, e env, _ *Config, kb *knowledge.Service, rest []string) int {
	fs := flag.NewFlagSet("knowledge search", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	limit := knowledgeSearchFlags(fs)
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	q := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(q) == "" {
		fmt.Fprintln(e.stderr, "echogate knowledge search: give a query, e.g. echogate knowledge search how do I deploy")
		return 2
	}
	ps, keywordOnly, err := kb.Search(ctx, q, *limit)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate knowledge search:", err)
		return 1
	}
	if keywordOnly {
		fmt.Fprintln(e.stderr, "note: the embedding endpoint is unavailable; results come from keyword search only")
	}
	if len(ps) == 0 {
		fmt.Fprintln(e.stdout, "no passages found")
	}
	for i, p := range ps {
		text := knowledge.RenderPassage(p)
		if i == 0 {
			text = strings.TrimPrefix(text, "\n") // a blank line between passages, none before the first
		}
		fmt.Fprint(e.stdout, text)
	}
	return 0
}

func knowledgeList(ctx context.Context, e env, cfg *Config, kb *knowledge.Service, _ []string) int {
	ds, err := kb.List(ctx, 0)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate knowledge list:", err)
		return 1
	}
	if len(ds) == 0 {
		fmt.Fprintln(e.stdout, "the knowledge base is empty: add files with `echogate knowledge add PATH…`")
	}
	current := embedIdentity(cfg, false)
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	if len(ds) > 0 {
		fmt.Fprintln(tw, "ID\tCHUNKS\tBYTES\tUPDATED\tEMBEDDINGS\tSOURCE")
	}
	for _, d := range ds {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", d.ID, d.Chunks, d.Bytes, d.UpdatedAt.Format(time.DateTime), embedLabel(d.EmbedModel, current), d.Source)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintln(e.stderr, "echogate knowledge list:", err)
		return 1
	}
	return 0
}

func knowledgeRm(ctx context.Context, e env, _ *Config, kb *knowledge.Service, rest []string) int {
	if len(rest) != 1 {
		fmt.Fprintln(e.stderr, "echogate knowledge rm: name one document id or path (see `echogate knowledge list`)")
		return 2
	}
	d, err := kb.Remove(ctx, rest[0])
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate knowledge rm:", err)
		return 1
	}
	fmt.Fprintf(e.stdout, "removed %s (%s, %s)\n", d.ID, d.Source, plural(d.Chunks, "chunk"))
	return 0
}

func cmdMemory(ctx context.Context, e env, cfg *Config, log *slog.Logger, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(e.stderr, memoryUsage)
		return 2
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("memory "+sub, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	opts := memoryFlags(fs, sub)
	user, all, limit := opts.user, opts.all, opts.limit
	switch sub {
	case "list", "search", "forget", "reembed":
	default:
		fmt.Fprintf(e.stderr, "echogate memory: unknown command %q\n%s\n", sub, memoryUsage)
		return 2
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if !optIn(cfg.Memory.Enabled) {
		fmt.Fprintln(e.stderr, "echogate memory: long-term memory is off: set memory.enabled: true (or ECHOGATE_MEMORY_ENABLED=true)")
		return 1
	}
	k, closeFn, err := openMemKB(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate memory:", err)
		return 1
	}
	defer closeFn()
	mem := k.mem
	var owners []string
	if *user != "" {
		owners = []string{memrec.UserOwner(*user)}
	}
	switch sub {
	case "list":
		return memoryList(ctx, e, mem, owners, *all, *limit)
	case "reembed":
		if fs.NArg() > 0 || *user != "" {
			fmt.Fprintln(e.stderr, "echogate memory reembed: takes no arguments (it re-embeds every stale memory)")
			return 2
		}
		return memoryReembed(ctx, e, mem)
	case "search":
		return memorySearch(ctx, e, mem, owners, *user, fs.Args(), *limit)
	default: // forget
		return memoryForget(ctx, e, mem, owners, fs.Args())
	}
}

// printMemory prints one memory on a line; label (may be empty) says what is wrong with its
// vector (see memEmbedLabel).
func printMemory(w io.Writer, m memrec.Memory, label string) {
	state := ""
	switch {
	case m.SupersededBy != "":
		state = "  [superseded by " + m.SupersededBy + "]"
	case !m.ExpiresAt.IsZero():
		state = "  [expires " + m.ExpiresAt.Format(time.DateTime) + "]"
	}
	pin := ""
	if m.Pinned {
		pin = " pinned"
	}
	if label != "" {
		label = "  " + label
	}
	fmt.Fprintf(w, "%s  %-24s  %-10s%s  %s  %s%s%s\n", m.ID, m.Owner, m.Kind, pin, m.UpdatedAt.Format(time.DateOnly), m.Text, state, label)
}

// progress shows ingestion: a redrawn bar on a terminal, one line per file otherwise.
type progress struct {
	w   io.Writer
	tty bool
	any bool
}

func newProgress(w io.Writer, tty bool) *progress { return &progress{w: w, tty: tty} }

func (p *progress) update(pr knowledge.Progress) {
	p.any = true
	name := filepath.Base(pr.Path)
	status := pr.Status
	if pr.Err != nil {
		status = "failed: " + pr.Err.Error()
	} else if pr.Status != "unchanged" {
		status = fmt.Sprintf("%s (%s)", pr.Status, plural(pr.Chunks, "chunk"))
	}
	if !p.tty {
		fmt.Fprintf(p.w, "[%d/%d] %s: %s\n", pr.Index, pr.Total, pr.Path, status)
		return
	}
	const width = 24
	filled := width * pr.Index / max(pr.Total, 1)
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	line := fmt.Sprintf("\r%s %d/%d %s: %s", bar, pr.Index, pr.Total, name, status)
	if r := []rune(line); len(r) > 100 {
		line = string(r[:100])
	}
	fmt.Fprintf(p.w, "%s\x1b[K", line)
	if pr.Err != nil {
		fmt.Fprintln(p.w)
	}
}

func (p *progress) done() {
	if p.tty && p.any {
		fmt.Fprintln(p.w)
	}
}

func printReport(w io.Writer, rep knowledge.Report) {
	fmt.Fprintf(w, "knowledge: %d added, %d updated, %d unchanged, %d failed, %d re-embedded (another embedding model); %s written, %d embedded\n",
		rep.Added, rep.Updated, rep.Unchanged, rep.Failed, rep.Reembedded, plural(rep.Chunks, "chunk"), rep.Embedded)
	if n := len(rep.Skipped); n > 0 {
		const show = 10
		names := strings.Join(rep.Skipped[:min(n, show)], ", ")
		if n > show {
			names += fmt.Sprintf(" and %d more", n-show)
		}
		fmt.Fprintf(w, "knowledge: %d skipped (not .md, .txt, .html or .pdf): %s\n", n, names)
	}
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// embedLabel says which embedder made a document's vectors, labelling the demo one (its vectors
// hash words: no meaning) and those of another model than the current one.
func embedLabel(model, current string) string {
	label := "[" + orStr(model, "embedder not recorded") + "]"
	if knowledge.IsDemoEmbedModel(model) {
		label = "[demo embeddings: words only, not meaning]"
	}
	if model != current {
		label += " (stale: run `echogate knowledge reembed`)"
	}
	return label
}
