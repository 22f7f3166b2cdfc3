package main

import (
	"context"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/compress"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/sqlite"
)

var (
	_ compress.CheckpointStore = (*sqlite.Store)(nil)
	_ compress.CheckpointStore = (*postgres.Store)(nil)
	_ pipeline.Compactor       = (*compress.Compressor)(nil)
	// The pipeline starts turns from the latest checkpoint through this optional method.
	_ interface {
		Rebuild(context.Context, echogate.SessionKey, []echogate.StoredMessage) ([]echogate.Message, []echogate.StoredMessage)
	} = (*compress.Compressor)(nil)
	// In a shared conversation the pipeline compacts and starts turns through these optional
	// methods, so that a checkpoint holds no per-person tool results; a Compactor without them is
	// not run there and its checkpoints are not replayed there.
	_ interface {
		CompactScrubbed(context.Context, echogate.SessionKey, []echogate.Message, func(echogate.Usage),
			func(echogate.Message) (echogate.Message, bool)) ([]echogate.Message, bool, error)
		RebuildScoped(context.Context, echogate.SessionKey, []echogate.StoredMessage, bool) ([]echogate.Message, []echogate.StoredMessage)
	} = (*compress.Compressor)(nil)
)

// promptReserve is the part of the context window kept for what the compressor does not see:
// the system prompt with its memory and knowledge sections.
const promptReserve = 1000

// compactor returns the ConversationCompressor the pipeline runs before every model call: it
// summarizes older turns into a checkpoint when the prompt nears agent.compress_threshold of the
// default model's window (models.context_windows, else 128000 tokens), keeps the last
// agent.keep_turns user turns verbatim and stores the checkpoint with the transcript. It returns
// nil (no compression) only when the compressor cannot be built, which config validation rules
// out; the reason is logged.
func (c *core) compactor() pipeline.Compactor {
	cfg := c.cfg
	cs, ok := c.store.(compress.CheckpointStore)
	if !ok {
		c.log.Error("context compression disabled: the store keeps no checkpoints", "store", c.backend)
		return nil
	}
	window := compress.DefaultWindow
	if w, ok := cfg.Models.ContextWindows[cfg.Models.Default]; ok && w > 0 {
		window = w
	}
	// Tool definitions travel with every request but are not messages: keep room for them.
	reserve := promptReserve
	for _, s := range c.tools.Specs() {
		reserve += compress.EstimateText(s.Name) + compress.EstimateText(s.Description) + compress.EstimateText(string(s.Parameters)) + compress.ToolCallOverhead
	}
	thr := cfg.Agent.CompressThreshold
	if thr == 0 {
		thr = compress.DefaultThreshold
	}
	reserve = max(0, min(reserve, window/4, int(float64(window)*thr)-512))
	comp, err := compress.New(compress.Config{
		ContextWindows: cfg.Models.ContextWindows,
		ChatModel:      cfg.Models.Default,
		Threshold:      cfg.Agent.CompressThreshold,
		KeepTurns:      cfg.Agent.KeepTurns,
		Reserve:        reserve,
	}, c.model, cs, c.log.With("component", "compress"))
	if err != nil {
		c.log.Error("context compression disabled", "err", err)
		return nil
	}
	return comp
}
