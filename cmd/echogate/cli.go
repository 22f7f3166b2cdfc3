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
	short    string // the line of `echogate help` (top-level commands); "" = the summary's first line
	// flags defines the command's flags on fs; nil means it takes none.
	flags func(fs *flag.FlagSet)
	// args says whether positional arguments are accepted.
	args bool
	subs []command
}

// commands is every command of the binary, in help order.
var commands = []command{
	{name: "serve", synopsis: "serve", short: "run the gateway (channels, HTTP server, workers)", summary: "Run the gateway: every configured channel, the HTTP server (console, APIs, /metrics,\n/healthz, /readyz) and the background workers. Ctrl-C / SIGTERM drains running turns and exits 0.",
		flags: func(fs *flag.FlagSet) { serveFlags(fs) }},
	{name: "chat", synopsis: "chat [-m TEXT] [--session ID] [--user ID] [--approve]", short: "chat in the terminal; -m sends one message and prints the answer", summary: "Talk to the agent in the terminal through the full pipeline. With -m: one turn, the answer on\nstdout, exit 0; without a TTY an approval request is denied unless --approve.",
		flags: func(fs *flag.FlagSet) { chatFlags(fs) }},
	{name: "migrate", synopsis: "migrate", short: "apply storage migrations", summary: "Apply storage migrations (serve does it at start too)."},
	{name: "compact", synopsis: "compact", short: "apply storage retention now and reclaim the freed space", summary: "Apply storage retention now (storage.event_retention, storage.retention) and give the freed\nspace back to the file system (VACUUM); best run while the gateway is quiet."},
	{name: "doctor", synopsis: "doctor", short: "check configuration, tokens, database and model endpoint", summary: "Check the configuration, database, model endpoint, Slack and Discord tokens, and every MCP\nserver; print each problem with its fix; exit 1 on a problem."},
	{name: "knowledge", synopsis: "knowledge add|search|list|rm|reembed", short: "manage the knowledge base", summary: "Manage the knowledge base (knowledge.enabled: true).", subs: []command{
		{name: "add", synopsis: "knowledge add PATH…", summary: "Ingest Markdown, text, HTML and PDF files and folders (unchanged files are skipped).", args: true},
		{name: "search", synopsis: "knowledge search [--limit N] QUERY", summary: "Hybrid search; prints passages with citation ids.", args: true,
			flags: func(fs *flag.FlagSet) { knowledgeSearchFlags(fs) }},
		{name: "list", synopsis: "knowledge list", summary: "List the documents, with the embedding model of their vectors."},
		{name: "rm", synopsis: "knowledge rm ID|PATH", summary: "Remove a document and its passages.", args: true},
		{name: "reembed", synopsis: "knowledge reembed", summary: "Re-embed, from their files, the documents whose vectors came from another embedding model\n(embeddings.model or the provider changed); until then their vectors are not searched."},
	}},
	{name: "memory", synopsis: "memory list|search|forget|reembed", short: "inspect and edit long-term memory", summary: "Inspect and edit long-term memory (memory.enabled: true).", subs: []command{
		{name: "list", synopsis: "memory list [--user U] [--all] [--limit N]", summary: "List memories (current ones unless --all), e.g. --user slack:U123.",
			flags: func(fs *flag.FlagSet) { memoryFlags(fs, "list") }},
		{name: "search", synopsis: "memory search --user U [--limit N] QUERY", summary: "Search a user's memories.", args: true,
			flags: func(fs *flag.FlagSet) { memoryFlags(fs, "search") }},
		{name: "forget", synopsis: "memory forget [--user U] ID", summary: "Delete one memory.", args: true,
			flags: func(fs *flag.FlagSet) { memoryFlags(fs, "forget") }},
		{name: "reembed", synopsis: "memory reembed", summary: "Re-embed the current memories whose vectors came from another embedding model (or have\nnone); until then they are found by full text only."},
	}},
	{name: "skills", synopsis: "skills list|check|lock", short: "list, validate and pin the installed Agent Skills", summary: "Agent Skills under skills.dirs (default ./skills beside the configuration file).", subs: []command{
		{name: "list", synopsis: "skills list", summary: "List the skills: name, description, the agents that have them (agents[].skills), locked or not."},
		{name: "check", synopsis: "skills check", summary: "Validate every skill (Agent Skills format) and check it against skills.lock; exit 1 on a problem."},
		{name: "lock", synopsis: "skills lock", summary: "Write skills.lock (sha256 of every file of every skill): once it exists, a skill that differs\nfrom it is refused at start and on reload until you review the change and lock again."},
	}},
	{name: "schedule", synopsis: "schedule list|run|pause|resume", short: "scheduled jobs: list, run now, pause, resume", summary: "Scheduled work (schedules:, and the jobs people made with the schedule tool).", subs: []command{
		{name: "list", synopsis: "schedule list", summary: "List every job: id, state, when, next run, last outcome, owner, agent, where it delivers."},
		{name: "run", synopsis: "schedule run NAME|ID", summary: "Run a job now, once, through the running gateway (POST /api/schedules/{id}/run at http.addr).", args: true},
		{name: "pause", synopsis: "schedule pause NAME|ID", summary: "Pause a job (a running gateway sees it at its next pass).", args: true},
		{name: "resume", synopsis: "schedule resume NAME|ID", summary: "Resume a job: its failures and back-off are cleared; it runs from its next slot after now.", args: true},
	}},
	{name: "mcp", synopsis: "mcp login|logout|status", short: "log in to and out of MCP servers behind OAuth; show each server's state", summary: "MCP servers (mcp.servers).", subs: []command{
		{name: "login", synopsis: "mcp login [--paste | --dm slack:USER] NAME", summary: "Log in to a server with auth: oauth. With the gateway running, it begins the login there (POST\n/api/mcp/login at http.addr) and prints the URL: open it, the redirect lands on the gateway's\n/oauth/callback. Without a running gateway, a 127.0.0.1 listener receives the redirect; on a\nheadless host --paste reads the URL the browser was sent back to from stdin instead. --dm\nslack:U123 (or discord:ID) has the running gateway send the URL to that approver by DM.", args: true,
			flags: func(fs *flag.FlagSet) { mcpLoginFlags(fs) }},
		{name: "logout", synopsis: "mcp logout NAME", summary: "Log out of a server with auth: oauth: its grant is revoked at the authorization server (RFC 7009)\nwhere that offers revocation, and forgotten; the server needs login again. Through the running\ngateway when one answers at http.addr, else on the store.", args: true},
		{name: "status", synopsis: "mcp status", summary: "Each server: connected (its tools), needs login, or why it is not connected (from the running\ngateway's /api/ready, else by connecting as doctor does)."},
	}},
	{name: "version", synopsis: "version", short: "print version and build info (also --version, -v)", summary: "Print the version and build info."},
	{name: "healthcheck", synopsis: "healthcheck", short: "exit 0 when the local gateway answers /healthz (container health checks)", summary: "Exit 0 when the local gateway answers /healthz (for container health checks)."},
	{name: "help", synopsis: "help [COMMAND [SUBCOMMAND]]", short: "show help for a command (also: echogate COMMAND --help)", summary: "Show help for echogate or one command.", args: true},
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
		return flagError(path, err, fs, "run `"+path+" --help`")
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
			fmt.Fprintf(w, "  %-44s %s\n", s.synopsis, strings.ReplaceAll(s.summary, "\n", "\n"+strings.Repeat(" ", 47)))
		}
		fmt.Fprintf(w, "\nRun `%s COMMAND --help` for a command's flags.\n", path)
	}
	if c.flags != nil {
		fmt.Fprintln(w, "\nFlags:")
		fs := flag.NewFlagSet(path, flag.ContinueOnError)
		c.flags(fs)
		printFlags(w, fs)
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
		text:    fs.String("m", "", "send `TEXT` as one message, print the answer and exit"),
		session: fs.String("session", "", "`ID` of the session to continue (default: a one-shot session with -m, \"default\" otherwise)"),
		user:    fs.String("user", "", "user `ID` (default console-user)"),
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

// memoryFlags defines the flags memory's subcommand sub takes: --user for every one that reads
// memories, --all for list, --limit for list and search; the others keep their defaults.
func memoryFlags(fs *flag.FlagSet, sub string) memoryOpts {
	opts := memoryOpts{user: new(string), all: new(bool), limit: new(int)}
	*opts.limit = 50
	if sub == "reembed" {
		return opts
	}
	opts.user = fs.String("user", "", "the user `U`: a qualified id, e.g. slack:U123 or web:alice")
	if sub == "list" {
		opts.all = fs.Bool("all", false, "include superseded and expired memories")
	}
	if sub == "list" || sub == "search" {
		opts.limit = fs.Int("limit", 50, "memories to show (0: all)")
	}
	return opts
}

// flagName writes a flag as the usage lines do: --name, or -x for a one-letter flag.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// printFlags lists fs's flags, each as --name ARG, its meaning and its default.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		switch arg {
		case "int":
			arg = "N"
		case "string":
			arg = "TEXT"
		}
		left := flagName(f.Name)
		if arg != "" {
			left += " " + arg
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		if len(left) > 20 {
			fmt.Fprintf(w, "  %s\n  %-20s %s\n", left, "", usage)
			return
		}
		fmt.Fprintf(w, "  %-20s %s\n", left, usage)
	})
}

// flagError turns the flag package's parse error into one that writes the flag with -- and
// names the nearest flag fs defines; hint says where the list is.
func flagError(path string, err error, fs *flag.FlagSet, hint string) error {
	bad, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return fmt.Errorf("%s: %v (%s)", path, err, hint)
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if s := closest(bad, names); s != "" {
		return fmt.Errorf("%s: unknown flag %s: did you mean %s? (%s)", path, flagName(bad), flagName(s), hint)
	}
	return fmt.Errorf("%s: unknown flag %s (%s)", path, flagName(bad), hint)
}

// usageText is `echogate help`: every command of the table with its one-line summary.
func usageText() string {
	var b strings.Builder
	b.WriteString("echogate — an AI agent for Slack, Discord, the web and the terminal\n\nUsage:\n  echogate [--config FILE] <command> [flags]\n\nCommands:\n")
	for _, c := range commands {
		short := c.short
		if short == "" {
			short = firstLine(c.summary)
		}
		if len(c.synopsis) > 26 {
			fmt.Fprintf(&b, "  %s\n  %-26s %s\n", c.synopsis, "", short)
			continue
		}
		fmt.Fprintf(&b, "  %-26s %s\n", c.synopsis, short)
	}
	b.WriteString(`
Configuration: --config FILE or ECHOGATE_CONFIG, else ./echogate.yaml when present; every key can
be set from the environment (see README.md and echogate.example.yaml).
`)
	return b.String()
}
