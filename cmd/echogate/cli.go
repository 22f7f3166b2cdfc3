package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// command describes one CLI command for help, flag checking and suggestions. Checking happens
// before the configuration is read, so `CMD --help` and a bad flag never have side effects.
type command struct {
	name     string
	synopsis string // after "echogate "
	summary  string
	// flags defines the command's flags on fs; nil means it takes none.
	flags func(fs *flag.FlagSet)
	// args says whether positional arguments are accepted.
	args bool
	subs []command
}

// commands is every command of the binary, in help order.
var commands = []command{
	{name: "serve", synopsis: "serve", summary: "Run the gateway: every configured channel, the HTTP server (console, APIs, /metrics,\n/healthz, /readyz) and the background workers. Ctrl-C / SIGTERM drains running turns and exits 0.",
		flags: func(fs *flag.FlagSet) { serveFlags(fs) }},
	{name: "chat", synopsis: "chat [-m TEXT] [--session ID] [--user ID] [--approve]", summary: "Talk to the agent in the terminal through the full pipeline. With -m: one turn, the answer on\nstdout, exit 0; without a TTY an approval request is denied unless --approve.",
		flags: func(fs *flag.FlagSet) { chatFlags(fs) }},
	{name: "migrate", synopsis: "migrate", summary: "Apply storage migrations (serve does it at start too)."},
	{name: "compact", synopsis: "compact", summary: "Apply storage retention now (storage.event_retention, storage.retention) and give the freed\nspace back to the file system (VACUUM); best run while the gateway is quiet."},
	{name: "doctor", synopsis: "doctor", summary: "Check the configuration, database, model endpoint, Slack and Discord tokens, and every MCP\nserver; print each problem with its fix; exit 1 on a problem."},
	{name: "knowledge", synopsis: "knowledge add|search|list|rm|reembed", summary: "Manage the knowledge base (knowledge.enabled: true).", subs: []command{
		{name: "add", synopsis: "knowledge add PATH…", summary: "Ingest Markdown, text, HTML and PDF files and folders (unchanged files are skipped).", args: true},
		{name: "search", synopsis: "knowledge search [--limit N] QUERY", summary: "Hybrid search; prints passages with citation ids.", args: true,
			flags: func(fs *flag.FlagSet) { knowledgeSearchFlags(fs) }},
		{name: "list", synopsis: "knowledge list", summary: "List the documents, with the embedding model of their vectors."},
		{name: "rm", synopsis: "knowledge rm ID|PATH", summary: "Remove a document and its passages.", args: true},
		{name: "reembed", synopsis: "knowledge reembed", summary: "Re-embed, from their files, the documents whose vectors came from another embedding model\n(embeddings.model or the provider changed); until then their vectors are not searched."},
	}},
	{name: "memory", synopsis: "memory list|search|forget|reembed", summary: "Inspect and edit long-term memory (memory.enabled: true).", subs: []command{
		{name: "list", synopsis: "memory list [--user U] [--all] [--limit N]", summary: "List memories (current ones unless --all), e.g. --user slack:U123.",
			flags: func(fs *flag.FlagSet) { memoryFlags(fs) }},
		{name: "search", synopsis: "memory search --user U QUERY", summary: "Search a user's memories.", args: true,
			flags: func(fs *flag.FlagSet) { memoryFlags(fs) }},
		{name: "forget", synopsis: "memory forget [--user U] ID", summary: "Delete one memory.", args: true,
			flags: func(fs *flag.FlagSet) { memoryFlags(fs) }},
		{name: "reembed", synopsis: "memory reembed", summary: "Re-embed the current memories whose vectors came from another embedding model (or have\nnone); until then they are found by full text only."},
	}},
	{name: "skills", synopsis: "skills list|check|lock", summary: "Agent Skills under skills.dirs (default ./skills beside the configuration file).", subs: []command{
		{name: "list", synopsis: "skills list", summary: "List the skills: name, description, the agents that have them (agents[].skills), locked or not."},
		{name: "check", synopsis: "skills check", summary: "Validate every skill (Agent Skills format) and check it against skills.lock; exit 1 on a problem."},
		{name: "lock", synopsis: "skills lock", summary: "Write skills.lock (sha256 of every file of every skill): once it exists, a skill that differs\nfrom it is refused at start and on reload until you review the change and lock again."},
	}},
	{name: "schedule", synopsis: "schedule list|run|pause|resume", summary: "Scheduled work (schedules:, and the jobs people made with the schedule tool).", subs: []command{
		{name: "list", synopsis: "schedule list", summary: "List every job: id, state, when, next run, last outcome, owner, agent, where it delivers."},
		{name: "run", synopsis: "schedule run NAME|ID", summary: "Run a job now, once, through the running gateway (POST /api/schedules/{id}/run at http.addr).", args: true},
		{name: "pause", synopsis: "schedule pause NAME|ID", summary: "Pause a job (a running gateway sees it at its next pass).", args: true},
		{name: "resume", synopsis: "schedule resume NAME|ID", summary: "Resume a job: its failures and back-off are cleared; it runs from its next slot after now.", args: true},
	}},
	{name: "mcp", synopsis: "mcp login|logout|status", summary: "MCP servers (mcp.servers).", subs: []command{
		{name: "login", synopsis: "mcp login [--paste | --dm slack:USER] NAME", summary: "Log in to a server with auth: oauth. With the gateway running, it begins the login there (POST\n/api/mcp/login at http.addr) and prints the URL: open it, the redirect lands on the gateway's\n/oauth/callback. Without a running gateway, a 127.0.0.1 listener receives the redirect; on a\nheadless host --paste reads the URL the browser was sent back to from stdin instead. --dm\nslack:U123 (or discord:ID) has the running gateway send the URL to that approver by DM.", args: true,
			flags: func(fs *flag.FlagSet) { mcpLoginFlags(fs) }},
		{name: "logout", synopsis: "mcp logout NAME", summary: "Log out of a server with auth: oauth: its grant is revoked at the authorization server (RFC 7009)\nwhere that offers revocation, and forgotten; the server needs login again. Through the running\ngateway when one answers at http.addr, else on the store.", args: true},
		{name: "status", synopsis: "mcp status", summary: "Each server: connected (its tools), needs login, or why it is not connected (from the running\ngateway's /api/ready, else by connecting as doctor does)."},
	}},
	{name: "version", synopsis: "version", summary: "Print the version and build info."},
	{name: "healthcheck", synopsis: "healthcheck", summary: "Exit 0 when the local gateway answers /healthz (for container health checks)."},
	{name: "help", synopsis: "help [COMMAND [SUBCOMMAND]]", summary: "Show help for echogate or one command.", args: true},
}

// findCommand returns the command named name in list.
func findCommand(list []command, name string) (command, bool) {
	for _, c := range list {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// errHelpShown means help was printed on stdout: exit 0.
var errHelpShown = errors.New("help shown")

// checkArgs validates a command line (after the global flags and --config are removed) without
// reading any configuration: help requests print usage on w and return errHelpShown; an unknown
// command or flag returns an error that says what to run instead (exit 2).
func checkArgs(w io.Writer, args []string) error {
	name, rest := args[0], args[1:]
	if name == "help" {
		return helpFor(w, rest)
	}
	c, ok := findCommand(commands, name)
	if !ok {
		return unknownError("echogate", name, commands)
	}
	return checkCommand(w, c, "echogate "+c.name, rest)
}

func checkCommand(w io.Writer, c command, path string, args []string) error {
	if len(c.subs) > 0 {
		if len(args) == 0 {
			return fmt.Errorf("%s: name a command: %s (run `%s --help`)", path, subNames(c), path)
		}
		if isHelpFlag(args[0]) || args[0] == "help" {
			printHelp(w, c, path)
			return errHelpShown
		}
		sub, ok := findCommand(c.subs, args[0])
		if !ok {
			return unknownError(path, args[0], c.subs)
		}
		return checkCommand(w, sub, path+" "+sub.name, args[1:])
	}
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.flags != nil {
		c.flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(w, c, path)
			return errHelpShown
		}
		return fmt.Errorf("%s: %v (run `%s --help`)", path, err, path)
	}
	for _, a := range fs.Args() {
		if isHelpFlag(a) && !c.args {
			printHelp(w, c, path)
			return errHelpShown
		}
	}
	if !c.args && fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q (run `%s --help`)", path, fs.Args(), path)
	}
	return nil
}

func isHelpFlag(a string) bool { return a == "-h" || a == "--help" || a == "-help" }

// helpFor prints `echogate help [COMMAND [SUB]]`.
func helpFor(w io.Writer, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(w, usage)
		return errHelpShown
	}
	list, path := commands, "echogate"
	var c command
	for _, a := range args {
		if isHelpFlag(a) {
			if path == "echogate" {
				c, _ = findCommand(commands, "help")
				path = "echogate help"
			}
			break
		}
		var ok bool
		if c, ok = findCommand(list, a); !ok {
			return unknownError(path, a, list)
		}
		path += " " + c.name
		list = c.subs
	}
	printHelp(w, c, path)
	return errHelpShown
}

func printHelp(w io.Writer, c command, path string) {
	fmt.Fprintf(w, "Usage: echogate %s\n\n%s\n", c.synopsis, c.summary)
	if len(c.subs) > 0 {
		fmt.Fprintln(w, "\nCommands:")
		for _, s := range c.subs {
			fmt.Fprintf(w, "  %-44s %s\n", s.synopsis, firstLine(s.summary))
		}
		fmt.Fprintf(w, "\nRun `%s COMMAND --help` for a command's flags.\n", path)
	}
	if c.flags != nil {
		fmt.Fprintln(w, "\nFlags:")
		fs := flag.NewFlagSet(path, flag.ContinueOnError)
		fs.SetOutput(w)
		c.flags(fs)
		fs.PrintDefaults()
	}
	fmt.Fprintln(w, "\nGlobal flags:\n  --config FILE   YAML configuration (or ECHOGATE_CONFIG; default ./echogate.yaml when present)")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func subNames(c command) string {
	names := make([]string, len(c.subs))
	for i, s := range c.subs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// unknownError names the closest known command.
func unknownError(path, name string, list []command) error {
	names := make([]string, len(list))
	for i, c := range list {
		names[i] = c.name
	}
	hint := fmt.Sprintf("run `%s --help` for the list", path)
	if path == "echogate" {
		hint = "run `echogate help` for the list"
	}
	if s := closest(name, names); s != "" {
		return fmt.Errorf("%s: unknown command %q: did you mean %q? (%s)", path, name, s, hint)
	}
	return fmt.Errorf("%s: unknown command %q (%s)", path, name, hint)
}

// closest returns the candidate nearest to s by edit distance, or "" when none is near (more
// than two edits or a third of s's length away).
func closest(s string, candidates []string) string {
	best, bestD := "", max(2, len(s)/3)+1
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// chatOpts are chat's flags.
type chatOpts struct {
	text, session, user *string
	approve             *bool
}

func chatFlags(fs *flag.FlagSet) chatOpts {
	return chatOpts{
		text:    fs.String("m", "", "send one message, print the answer and exit"),
		session: fs.String("session", "", "session id to continue (default: a one-shot session with -m, \"default\" otherwise)"),
		user:    fs.String("user", "", "user id (default console-user)"),
		approve: fs.Bool("approve", false, "approve every tool call of this turn without asking"),
	}
}

func mcpLoginFlags(fs *flag.FlagSet) (paste *bool, dm *string) {
	return fs.Bool("paste", false, "finish by pasting the URL the browser was sent back to (headless host)"),
		fs.String("dm", "", "send the authorization URL to this approver by direct message (slack:USERID or discord:USERID; needs the running gateway)")
}

func knowledgeSearchFlags(fs *flag.FlagSet) *int {
	return fs.Int("limit", 5, "passages to show")
}

// memoryOpts are the memory subcommands' flags.
type memoryOpts struct {
	user  *string
	all   *bool
	limit *int
}

func memoryFlags(fs *flag.FlagSet) memoryOpts {
	return memoryOpts{
		user:  fs.String("user", "", "qualified user id, e.g. slack:U123 or web:alice"),
		all:   fs.Bool("all", false, "include superseded and expired memories"),
		limit: fs.Int("limit", 50, "memories to show (0: all)"),
	}
}
