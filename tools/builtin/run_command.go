package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/echogate/echogate/tools"
)

// RunCommandName is the stable name of the run_command tool.
const RunCommandName = "run_command"

// run_command defaults and limits.
const (
	DefaultCommandTimeout   = 30 * time.Second
	DefaultCommandMaxOutput = 16 << 10
	maxCommandArgs          = 64
	maxCommandArgLen        = 4096
	// killGrace bounds how long Call waits for output pipes after the process was killed
	// (a grandchild that escaped the process group may hold them open).
	killGrace = 2 * time.Second
)

// RunCommandConfig configures run_command. The tool is off unless Allowed names at least one
// command; the zero value of the other fields means defaults.
type RunCommandConfig struct {
	// Allowed lists the commands the model may run: bare names ("git", looked up in PATH at call
	// time) or absolute paths ("/usr/bin/git", callable by full path or by base name).
	Allowed []string
	// Dir is the working directory of every command (the data dir). Required, absolute or
	// relative to the process's working directory.
	Dir string
	// Timeout bounds one command; on expiry its whole process group is killed. Default 30s.
	Timeout time.Duration
	// MaxOutput caps the combined stdout+stderr returned to the model, in bytes. Default 16 KiB.
	MaxOutput int
	// Env holds extra "KEY=value" variables. Commands otherwise get only PATH (the gateway's),
	// HOME (Dir), LANG and TMPDIR, never the gateway's secrets.
	Env []string
	// PassEnv names variables of the gateway's environment passed on to commands with their
	// values at construction (tools.run_command.env); unset names are skipped.
	PassEnv []string
	// AllowPaths lists absolute directories arguments may name besides Dir
	// (tools.run_command.allow_paths). Any other absolute path, `..` leaving Dir, or `~` in an
	// argument is refused.
	AllowPaths []string
}

type runCommand struct {
	cfg     RunCommandConfig
	byName  map[string]string // what the model may send → what is executed
	allowP  []string          // clean absolute directories arguments may name besides cfg.Dir
	allowed string            // for error messages
	env     []string
	spec    tools.Spec
}

type commandArgs struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// NewRunCommand returns the run_command tool (Destructive). It checks cfg but does no I/O.
func NewRunCommand(cfg RunCommandConfig) (tools.Tool, error) {
	if len(cfg.Allowed) == 0 {
		return nil, errors.New("run_command: no command is allowed: list commands under tools.run_command.allowed (e.g. [git, ls]) or leave the tool off")
	}
	if cfg.Dir == "" {
		return nil, errors.New("run_command: no working directory: set Dir to the data directory")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("run_command: working directory %q: %w", cfg.Dir, err)
	}
	cfg.Dir = dir
	if cfg.Timeout < 0 || cfg.MaxOutput < 0 {
		return nil, fmt.Errorf("run_command: timeout %s and max_output %d must not be negative (0 means the default)", cfg.Timeout, cfg.MaxOutput)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultCommandTimeout
	}
	if cfg.MaxOutput == 0 {
		cfg.MaxOutput = DefaultCommandMaxOutput
	}
	r := &runCommand{cfg: cfg, byName: map[string]string{}}
	var names []string
	for _, a := range cfg.Allowed {
		switch {
		case a == "" || strings.ContainsAny(a, " \t\n\x00"):
			return nil, fmt.Errorf("run_command: allowed command %q must be a bare command name or an absolute path, without spaces or arguments", a)
		case filepath.IsAbs(a):
			a = filepath.Clean(a)
			r.byName[a] = a
			if base := filepath.Base(a); r.byName[base] == "" {
				r.byName[base] = a
			}
		case strings.ContainsRune(a, filepath.Separator) || strings.ContainsRune(a, '/'):
			return nil, fmt.Errorf("run_command: allowed command %q is a relative path: use a bare name found in PATH or an absolute path", a)
		default:
			r.byName[a] = a
		}
		names = append(names, a)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	r.allowed = strings.Join(names, ", ")
	for _, kv := range cfg.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("run_command: env entry %q must look like KEY=value", kv)
		}
	}
	if r.allowP, err = cleanAllowPaths(cfg.AllowPaths); err != nil {
		return nil, err
	}
	r.env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"TMPDIR=" + os.TempDir(),
		"LANG=C.UTF-8",
	}, cfg.Env...)
	for _, name := range cfg.PassEnv {
		if !envName.MatchString(name) {
			return nil, fmt.Errorf("run_command: tools.run_command.env entry %q must be a variable name such as GIT_AUTHOR_NAME (its value is taken from the gateway's environment)", name)
		}
		if v, ok := os.LookupEnv(name); ok {
			r.env = append(r.env, name+"="+v)
		}
	}
	r.spec = tools.Spec{
		Name: RunCommandName,
		Description: fmt.Sprintf("Run one allow-listed command (no shell: no pipes, redirects, globbing or variables) "+
			"in the gateway's data directory and return its exit status and combined output (first %d bytes). "+
			"Arguments may name only relative paths inside that directory (no absolute paths, .. or ~). "+
			"Allowed commands: %s. Each run is limited to %s.", cfg.MaxOutput, r.allowed, cfg.Timeout),
		Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"command":{"type":"string","description":"the command to run; one of: %s","minLength":1},`+
			`"args":{"type":"array","description":"arguments, each passed as is (no shell quoting or expansion)","items":{"type":"string","maxLength":%d},"maxItems":%d}},`+
			`"required":["command"],"additionalProperties":false}`, jsonEscape(r.allowed), maxCommandArgLen, maxCommandArgs)),
		Safety: tools.Destructive,
	}
	return r, nil
}

func (r *runCommand) Spec() tools.Spec { return r.spec }

// Call runs the command and blocks until it exits, times out (its process group is then killed
// and an IsError result returned) or ctx ends (the process group is killed and ctx's error
// returned). A command that cannot start or exits non-zero is an IsError result with its output.
func (r *runCommand) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	var args commandArgs
	if res, ok := decodeArgs(RunCommandName, raw, &args, `{"command": "git", "args": ["status"]}`); !ok {
		return res, nil
	}
	if args.Command == "" {
		return tools.Errorf(`run_command: argument "command" is required; allowed commands: %s`, r.allowed), nil
	}
	path, ok := r.byName[args.Command]
	if !ok {
		return tools.Errorf("run_command: command %q is not allowed; allowed commands: %s (pass arguments in \"args\", not in \"command\")", args.Command, r.allowed), nil
	}
	if len(args.Args) > maxCommandArgs {
		return tools.Errorf("run_command: %d arguments given, the limit is %d", len(args.Args), maxCommandArgs), nil
	}
	for i, a := range args.Args {
		if len(a) > maxCommandArgLen || strings.ContainsRune(a, 0) {
			return tools.Errorf("run_command: argument args[%d] must be at most %d bytes and contain no NUL byte", i, maxCommandArgLen), nil
		}
		if why := checkPathArg(a, r.cfg.Dir, r.allowP); why != "" {
			return tools.Errorf("run_command: argument args[%d] %q %s; commands may only name paths inside their working directory (use relative paths without ..). "+
				"An operator can allow more directories under tools.run_command.allow_paths in the config", i, a, why), nil
		}
	}
	display := strings.Join(append([]string{args.Command}, args.Args...), " ")

	runCtx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, path, args.Args...)
	cmd.Dir = r.cfg.Dir
	cmd.Env = r.env
	out := &cappedBuffer{max: r.cfg.MaxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	setProcessGroup(cmd)
	cmd.WaitDelay = killGrace

	started := time.Now()
	err := cmd.Run()
	elapsed := time.Since(started).Round(time.Millisecond)

	if ctx.Err() != nil {
		return tools.Result{}, fmt.Errorf("run_command: %s: %w", args.Command, ctx.Err())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s\n", display)
	isErr := false
	var exitErr *exec.ExitError
	switch {
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		isErr = true
		fmt.Fprintf(&b, "timed out after %s: the command was killed\n", r.cfg.Timeout)
	case err == nil:
		fmt.Fprintf(&b, "exit status 0 (%s)\n", elapsed)
	case errors.As(err, &exitErr):
		isErr = true
		fmt.Fprintf(&b, "exit status %d (%s)\n", exitErr.ExitCode(), elapsed)
	case errors.Is(err, exec.ErrWaitDelay):
		// Exited, but something it started kept the output open; report what we have.
		fmt.Fprintf(&b, "exit status 0 (%s; a background process it started was cut off)\n", elapsed)
	default:
		return tools.Errorf("run_command: cannot run %q: %v", args.Command, err), nil
	}
	text, dropped := out.result()
	if text != "" {
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("(no output)\n")
	}
	if dropped > 0 {
		fmt.Fprintf(&b, "[output truncated: %d more bytes not shown]\n", dropped)
	}
	return tools.Result{Content: b.String(), IsError: isErr}, nil
}

// cappedBuffer keeps the first max bytes written and counts the rest. Safe for concurrent use.
type cappedBuffer struct {
	mu      sync.Mutex
	max     int
	buf     bytes.Buffer
	dropped int64
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if room > len(p) {
		room = len(p)
	}
	if room > 0 {
		c.buf.Write(p[:room])
	}
	c.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

// result returns the kept output as valid UTF-8 (a rune cut at the cap is dropped) and how many
// bytes were not kept.
func (c *cappedBuffer) result() (string, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.buf.Bytes()
	dropped := c.dropped
	if dropped > 0 { // the cap may have cut the last rune: drop its start
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					dropped += int64(len(b) - i)
					b = b[:i]
				}
				break
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), dropped
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
