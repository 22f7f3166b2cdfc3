// Command echogate is the gateway: it runs the configured chat channels, the HTTP server and the
// background workers (serve), a terminal chat (chat), and the operator commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

// Build information, set with -ldflags "-X main.version=…".
var (
	version = "dev"
	commit  = ""
)

// env is how the command reaches its surroundings; tests replace it.
type env struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// environ lists the environment (os.Environ), to find misspelt ECHOGATE_* variables;
	// nil skips that check.
	environ func() []string
	isTTY   bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := env{args: os.Args[1:], stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ, isTTY: isTerminal(os.Stdin) && isTerminal(os.Stdout)}
	os.Exit(run(ctx, e))
}

// usage is `echogate help`, built from the command table (cli.go).
var usage = usageText()

// run executes one command and returns the process exit code.
func run(ctx context.Context, e env) int {
	global := flag.NewFlagSet("echogate", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	configPath := global.String("config", "", "YAML configuration file")
	showVersion := global.Bool("version", false, "print the version")
	global.BoolVar(showVersion, "v", false, "print the version")
	if err := global.Parse(e.args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(e.stdout, usage)
			return 0
		}
		fmt.Fprintln(e.stderr, flagError("echogate", err, global, "run `echogate help`"))
		return 2
	}
	if *showVersion {
		printVersion(e.stdout)
		return 0
	}
	args := global.Args()
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return 2
	}
	// Commands may take --config after the command name too.
	rest, cfgAfter := extractConfigFlag(args[1:])
	if cfgAfter != "" {
		*configPath = cfgAfter
	}
	cmd := args[0]
	// Help and flag mistakes are settled before anything is read or written.
	if err := checkArgs(e.stdout, append([]string{cmd}, rest...)); err != nil {
		if errors.Is(err, errHelpShown) {
			return 0
		}
		fmt.Fprintln(e.stderr, err)
		return 2
	}
	if cmd == "version" {
		printVersion(e.stdout)
		return 0
	}
	if e.environ != nil {
		if err := checkEnvNames(e.environ()); err != nil {
			fmt.Fprintln(e.stderr, "echogate:", err)
			return 2
		}
	}
	cfg, err := loadConfigFrom(*configPath, e.getenv, e.environ)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate:", err)
		return 2
	}
	if cmd == "chat" && e.getenv("ECHOGATE_LOG_LEVEL") == "" && cfg.Log.Level == "info" {
		cfg.Log.Level = "warn" // keep the terminal for the conversation
	}
	log := newLogger(cfg.Log, e.stderr)
	for _, w := range cfg.warnings {
		log.Warn("config: " + w)
	}
	return dispatch(ctx, e, cmd, cfg, log, rest)
}

// dispatch runs command cmd with its arguments rest; 2 for an unknown name, which checkArgs
// has refused already.
func dispatch(ctx context.Context, e env, cmd string, cfg *Config, log *slog.Logger, rest []string) int {
	code := 2
	switch cmd {
	case "serve":
		code = cmdServe(ctx, e, cfg, log, rest)
	case "chat":
		code = cmdChat(ctx, e, cfg, log, rest)
	case "migrate":
		code = cmdMigrate(ctx, e, cfg, log)
	case "compact":
		code = cmdCompact(ctx, e, cfg, log)
	case "doctor":
		code = cmdDoctor(ctx, e, cfg, log)
	case "healthcheck":
		code = cmdHealthcheck(ctx, e, cfg)
	case "knowledge":
		code = cmdKnowledge(ctx, e, cfg, log, rest)
	case "memory":
		code = cmdMemory(ctx, e, cfg, log, rest)
	case "skills":
		code = cmdSkills(ctx, e, cfg, rest) // skills_cmd.go
	case "schedule":
		code = cmdSchedule(ctx, e, cfg, log, rest) // schedule_cmd.go
	case "mcp":
		code = cmdMCP(ctx, e, cfg, rest) // mcp_cmd.go
	}
	return code
}

// extractConfigFlag pulls "--config FILE" / "--config=FILE" out of a command's arguments.
func extractConfigFlag(args []string) ([]string, string) {
	var out []string
	path := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--config" || a == "-config":
			if i+1 < len(args) {
				path = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--config="):
			path = strings.TrimPrefix(a, "--config=")
		default:
			out = append(out, a)
		}
	}
	return out, path
}

func printVersion(w io.Writer) {
	goVersion, rev, mod := "", commit, false
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if rev == "" {
					rev = s.Value
				}
			case "vcs.modified":
				mod = s.Value == "true"
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	if mod {
		rev += " (modified)"
	}
	fmt.Fprintf(w, "echogate %s\ncommit %s\n%s\n", version, rev, goVersion)
}

func newLogger(c LogConfig, w io.Writer) *slog.Logger {
	var lvl slog.Level
	switch strings.ToLower(c.Level) {
	case "debug":
		lvl = slog.LevelDebug
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
