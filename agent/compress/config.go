package compress

import (
	"fmt"
	"time"

	"github.com/echogate/echogate"
)

// Defaults of Config.
const (
	DefaultWindow          = 128000
	DefaultThreshold       = 0.8
	DefaultKeepTurns       = 4
	DefaultKeepToolResults = 3
	DefaultTimeout         = 2 * time.Minute
	// maxSummaryTokens caps the default SummaryMaxTokens.
	maxSummaryTokens = 2000
	// maxToolResultTokens caps each verbatim tool result copied into a checkpoint.
	maxToolResultTokens = 500
	// targetFraction: after compressing, the prompt aims at this fraction of the threshold, so
	// the next calls of the turn have room to grow before compressing again.
	targetFraction = 0.6
	// maxLineages bounds the per-session transcript anchors kept between Rebuild and Compact.
	maxLineages = 4096
)

// CheckpointTitle starts every checkpoint message.
const CheckpointTitle = "Summary of the earlier conversation (checkpoint)"

// ackText is the assistant message that follows a checkpoint.
const ackText = "Understood. I will continue from this checkpoint and the messages that follow it."

// omittedText replaces the earlier conversation when it could not be summarized.
const omittedText = "Note: earlier messages of this conversation were left out to fit the model's context window " +
	"(they could not be summarized just now). If something from them is needed, ask the user."

// Config tunes a Compressor. The zero value means the defaults documented on each field.
type Config struct {
	// ContextWindows maps a model name to its context window in tokens (models.context_windows).
	ContextWindows map[string]int
	// DefaultWindow is the window of a model missing from ContextWindows; default 128000.
	DefaultWindow int
	// ChatModel is the model the conversation is sent to (the pipeline's default model): its
	// window is the one that counts. Empty means DefaultWindow applies.
	ChatModel string
	// Threshold is the fraction of the window at which compression starts; default 0.8. It
	// must be in (0, 1].
	Threshold float64
	// Reserve is the tokens Compact cannot see but the request carries (system prompt with its
	// memory and knowledge sections, tool definitions); it is subtracted from the threshold.
	// Default 0: the room above the threshold covers them. Set it for small windows.
	Reserve int
	// KeepTurns is how many of the latest user turns stay verbatim; default 4. Fewer are kept
	// when they alone would not fit; the current turn is always kept.
	KeepTurns int
	// KeepToolResults is how many of the latest tool results of the summarized part are copied
	// verbatim (capped) into the checkpoint; default 3; negative means none.
	KeepToolResults int
	// SummaryMaxTokens caps the summary; default an eighth of the threshold, at most 2000.
	SummaryMaxTokens int
	// Model is the model that writes the summary; default ChatModel.
	Model string
	// Timeout bounds one summary call; default 2m. When it passes, the oldest turns are dropped
	// instead.
	Timeout time.Duration
	// Estimate counts the tokens of one message; default EstimateMessage.
	Estimate func(echogate.Message) int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.DefaultWindow <= 0 {
		c.DefaultWindow = DefaultWindow
	}
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if c.KeepTurns == 0 {
		c.KeepTurns = DefaultKeepTurns
	}
	if c.KeepToolResults == 0 {
		c.KeepToolResults = DefaultKeepToolResults
	}
	if c.KeepToolResults < 0 {
		c.KeepToolResults = 0
	}
	if c.Model == "" {
		c.Model = c.ChatModel
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Estimate == nil {
		c.Estimate = EstimateMessage
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.Threshold < 0 || c.Threshold > 1 {
		return bad("Threshold %.3g is out of range: use a fraction of the context window in (0, 1], e.g. 0.8", c.Threshold)
	}
	if c.KeepTurns < 0 {
		return bad("KeepTurns %d is negative: use the number of latest user turns to keep verbatim, e.g. 4", c.KeepTurns)
	}
	if c.Reserve < 0 || c.SummaryMaxTokens < 0 {
		return bad("Reserve (%d) and SummaryMaxTokens (%d) must not be negative", c.Reserve, c.SummaryMaxTokens)
	}
	for m, w := range c.ContextWindows {
		if w <= 0 {
			return bad("context window of model %q is %d: give its size in tokens, e.g. 128000", m, w)
		}
	}
	if c.Model == "" && c.ChatModel == "" {
		return bad("no model to summarize with: set ChatModel (the conversation's model) or Model")
	}
	if lim := c.limit(); lim < 256 {
		return bad("the usable context (%d tokens: Threshold × window − Reserve) is too small to compress into; raise the window or Threshold, or lower Reserve", lim)
	}
	return nil
}

// window returns the context window of model.
func (c Config) window(model string) int {
	if w, ok := c.ContextWindows[model]; ok && w > 0 {
		return w
	}
	return c.DefaultWindow
}

// limit is the prompt size (as estimated, messages only) above which Compact compresses.
func (c Config) limit() int {
	return int(float64(c.window(c.ChatModel))*c.Threshold) - c.Reserve
}

// summaryTokens is the summary's cap.
func (c Config) summaryTokens() int {
	if c.SummaryMaxTokens > 0 {
		return c.SummaryMaxTokens
	}
	return max(64, min(maxSummaryTokens, c.limit()/8))
}

// toolResultTokens is the cap of each verbatim tool result in a checkpoint.
func (c Config) toolResultTokens() int {
	if c.KeepToolResults == 0 {
		return 0
	}
	return max(32, min(maxToolResultTokens, c.limit()/8/c.KeepToolResults))
}
