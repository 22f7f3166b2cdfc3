// Package console is the terminal channel behind `echogate chat`: an interactive conversation read
// line by line from a reader (Run), or one message answered on stdout (RunOnce, `chat -m`).
//
// The channel observes its session's turns (channels.TurnObserver): answer deltas are printed to
// Out as they stream, tool calls and results dimly to Err. Approval prompts are asked on a
// terminal (`approve? [y]es / [s]ession / [N]o`); without a terminal they are denied, unless
// Config.AutoApprove, which the pipeline honours before asking. Nothing ever waits on a terminal
// that is not there: every wait is bounded by ctx and Config.Timeout.
package console

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
)

// Config configures the console channel. The zero value reads nothing and writes nowhere.
type Config struct {
	In       io.Reader // lines typed by the user; nil reads nothing (EOF)
	Out, Err io.Writer // the answer; progress, prompts and notices. nil discards
	// IsTTY says In and Err are a terminal: approvals and questions are asked, and progress is
	// shown dimmed.
	IsTTY bool
	// Session names the conversation: a session id (conversation console:<id>) or, when it
	// holds ':', a full session key to continue (e.g. "slack:C123:1700000000.1"). Empty: Run
	// uses "default"; RunOnce uses a new one-shot session, deleted after the answer.
	Session string
	// User is the user's id. Default "console-user".
	User string
	// AutoApprove approves every approval request of the turns this channel starts
	// (`chat --approve`).
	AutoApprove bool
	// Ephemeral marks the session to be deleted after the answer (RunOnce sets it anyway when
	// Session is empty).
	Ephemeral bool
	// Timeout bounds the wait for one turn (RunOnce: for the whole command). Default 10m.
	Timeout time.Duration
	// PromptGrace is how long a paused turn waits for its approval prompt message before the
	// decision is sent as text ("approve"/"deny"). Default 2s.
	PromptGrace time.Duration
	// MaxLineBytes bounds one input line. Default 1 MiB.
	MaxLineBytes int
}

const (
	defaultTimeout     = 10 * time.Minute
	defaultPromptGrace = 2 * time.Second
	defaultMaxLine     = 1 << 20
	defaultUser        = "console-user"
	defaultSession     = "default"

	maxQueued       = 4096  // droppable items (deltas, tool progress) kept for the printer
	maxQueuedHard   = 65536 // every item
	maxPendingLines = 64
	maxDecisions    = 16
	argsPreview     = 160
)

// Channel is the console channel. It implements channels.Channel, channels.TurnObserver and
// channels.Health.
type Channel struct {
	cfg  Config
	log  *slog.Logger
	q    queue
	mu   sync.Mutex
	key  echogate.SessionKey // the session in use, set by Run or RunOnce
	conv echogate.ConversationRef
	eph  bool
	seq  int64
	busy bool // Run or RunOnce is active
}

var (
	_ channels.Channel      = (*Channel)(nil)
	_ channels.TurnObserver = (*Channel)(nil)
	_ channels.Health       = (*Channel)(nil)
)

// New returns a console channel. It validates cfg and does no I/O. A nil log discards logs.
func New(cfg Config, log *slog.Logger) (*Channel, error) {
	if cfg.Timeout < 0 || cfg.PromptGrace < 0 || cfg.MaxLineBytes < 0 {
		return nil, fmt.Errorf("console: Timeout, PromptGrace and MaxLineBytes must not be negative: use 0 for the defaults")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.PromptGrace == 0 {
		cfg.PromptGrace = defaultPromptGrace
	}
	if cfg.MaxLineBytes == 0 {
		cfg.MaxLineBytes = defaultMaxLine
	}
	cfg.User = strings.TrimSpace(cfg.User)
	if cfg.User == "" {
		cfg.User = defaultUser
	}
	if strings.ContainsAny(cfg.User, "\r\n\t") || len(cfg.User) > 128 {
		return nil, fmt.Errorf("console: user %q must be at most 128 characters without tabs or line breaks", cfg.User)
	}
	if s := cfg.Session; s != "" && (strings.ContainsAny(s, " \t\r\n") || len(s) > 256) {
		return nil, fmt.Errorf("console: session %q must be at most 256 characters without spaces", s)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Err == nil {
		cfg.Err = io.Discard
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Channel{cfg: cfg, log: log.With("channel", echogate.PlatformConsole)}
	c.q.notify = make(chan struct{}, 1)
	c.q.changed = make(chan struct{})
	return c, nil
}

// Name returns echogate.PlatformConsole.
func (c *Channel) Name() string { return echogate.PlatformConsole }

// Ready always reports true: the terminal needs no connection.
func (c *Channel) Ready() (bool, string) { return true, "terminal" }

// useSession fixes the session for this run. oneShot picks a fresh ephemeral session when none
// is configured.
func (c *Channel) useSession(oneShot bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy {
		return fmt.Errorf("console: already running")
	}
	c.busy = true
	id := c.cfg.Session
	c.eph = c.cfg.Ephemeral
	switch {
	case id == "" && oneShot:
		id = "once-" + strings.ToLower(rand.Text()[:12])
		c.eph = true
	case id == "":
		id = defaultSession
	}
	c.conv = echogate.ConversationRef{Platform: echogate.PlatformConsole, Channel: id, DM: true}
	c.key = c.conv.SessionKey()
	if strings.Contains(id, ":") { // a full session key to continue
		c.key = echogate.SessionKey(id)
	}
	c.q.clear()
	return nil
}

func (c *Channel) release() {
	c.mu.Lock()
	c.busy = false
	c.mu.Unlock()
}

// event builds an inbound event of this channel's session.
func (c *Channel) event(kind echogate.EventKind, text string) echogate.InboundEvent {
	c.mu.Lock()
	conv, key, eph := c.conv, c.key, c.eph
	c.mu.Unlock()
	id := "con-" + rand.Text()
	ev := echogate.InboundEvent{
		ID:           id,
		Kind:         kind,
		Conversation: conv,
		Actor:        echogate.Actor{ID: c.cfg.User},
		Text:         text,
		Message:      echogate.MessageRef{Platform: echogate.PlatformConsole, Channel: conv.Channel, ID: id},
		ReceivedAt:   time.Now(),
		Ephemeral:    eph,
		AutoApprove:  c.cfg.AutoApprove,
	}
	if key != conv.SessionKey() {
		ev.Session = key
	}
	return ev
}

// Send records out and hands it to the printer; it returns the message's reference
// {console, session, "m<N>"}. It never blocks on the terminal. Replies already shown by the
// turn's streamed events are not printed twice.
func (c *Channel) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	if err := ctx.Err(); err != nil {
		return echogate.MessageRef{}, fmt.Errorf("console: send: %w", err)
	}
	if p := out.Conversation.Platform; p != "" && p != echogate.PlatformConsole {
		return echogate.MessageRef{}, fmt.Errorf("console: send: outbound message is for platform %q", p)
	}
	c.mu.Lock()
	c.seq++
	ch := out.Conversation.Channel
	if ch == "" {
		ch = c.conv.Channel
	}
	ref := echogate.MessageRef{Platform: echogate.PlatformConsole, Channel: ch, ID: "m" + strconv.FormatInt(c.seq, 10)}
	c.mu.Unlock()
	c.q.push(item{out: &out, ref: ref}, false)
	return ref, nil
}

// ObserveTurn hands ev to the printer. It never blocks: when the printer is far behind, deltas
// and tool progress are dropped (the final answer still arrives whole with the done event).
func (c *Channel) ObserveTurn(ev echogate.TurnEvent) {
	c.mu.Lock()
	key := c.key
	c.mu.Unlock()
	if ev.Session != "" && key != "" && ev.Session != key {
		return
	}
	droppable := false
	switch ev.Type {
	case echogate.TurnDelta, echogate.TurnReasoning, echogate.TurnToolCall, echogate.TurnToolResult, echogate.TurnPlan:
		droppable = true
	}
	if !c.q.push(item{ev: &ev}, droppable) {
		c.log.Debug("console printer behind: dropped a turn event", "session", string(ev.Session), "turn", ev.Turn)
	}
}

// item is one thing for the printer: a turn event or a sent message.
type item struct {
	ev  *echogate.TurnEvent
	out *echogate.Outbound
	ref echogate.MessageRef
}

// queue hands items from ObserveTurn and Send (any goroutine) to the run loop without blocking.
type queue struct {
	mu      sync.Mutex
	items   []item
	notify  chan struct{} // capacity 1: "items is not empty"
	pushed  uint64        // items accepted so far
	done    uint64        // items handled so far
	changed chan struct{} // closed and replaced when done grows
}

// push appends it; a droppable item is refused when maxQueued items wait, any item at
// maxQueuedHard. It reports whether it was kept.
func (q *queue) push(it item, droppable bool) bool {
	q.mu.Lock()
	n := len(q.items)
	if n >= maxQueuedHard || droppable && n >= maxQueued {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, it)
	q.pushed++
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return true
}

func (q *queue) take() []item {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.items
	q.items = nil
	return out
}

func (q *queue) clear() { q.processed(len(q.take())) }

// processed records that n taken items were handled.
func (q *queue) processed(n int) {
	if n == 0 {
		return
	}
	q.mu.Lock()
	q.done += uint64(n)
	close(q.changed)
	q.changed = make(chan struct{})
	q.mu.Unlock()
}

// Flush blocks until every message sent and every turn event observed before the call has been
// printed, or ctx ends. It makes output checks deterministic; it returns ctx's error when ctx
// ends first.
func (c *Channel) Flush(ctx context.Context) error {
	c.q.mu.Lock()
	target := c.q.pushed
	c.q.mu.Unlock()
	for {
		c.q.mu.Lock()
		done, ch := c.q.done, c.q.changed
		c.q.mu.Unlock()
		if done >= target {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("console: flush: %w", ctx.Err())
		}
	}
}

type line struct {
	text string
	err  error // io.EOF at the end of In
}

// readLines reads In line by line until EOF or stop. The goroutine ends when stop is closed and
// its current Read returned (a terminal Read cannot be interrupted; it ends with the process).
func (c *Channel) readLines(stop <-chan struct{}) <-chan line {
	out := make(chan line)
	if c.cfg.In == nil {
		go func() {
			select {
			case out <- line{err: io.EOF}:
			case <-stop:
			}
		}()
		return out
	}
	go func() {
		sc := bufio.NewScanner(c.cfg.In)
		sc.Buffer(make([]byte, 0, 64<<10), c.cfg.MaxLineBytes)
		for sc.Scan() {
			select {
			case out <- line{text: sc.Text()}:
			case <-stop:
				return
			}
		}
		err := sc.Err()
		if err == nil {
			err = io.EOF
		}
		select {
		case out <- line{err: err}:
		case <-stop:
		}
	}()
	return out
}

// printing helpers

func (c *Channel) dim(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if c.cfg.IsTTY {
		s = "\x1b[2m" + s + "\x1b[0m"
	}
	fmt.Fprintln(c.cfg.Err, s)
}

func (c *Channel) info(format string, args ...any) {
	fmt.Fprintf(c.cfg.Err, format+"\n", args...)
}

func preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
