// Package channels holds the contract every chat platform adapter satisfies. Adapters live in
// sub-packages (slack, discord, web, console) and import nothing of pipeline, agent, tools, memory or
// knowledge: they turn platform events into echogate.InboundEvent values and post echogate.Outbound
// values.
package channels

import (
	"context"

	"github.com/echogate/echogate"
)

// Sink receives normalized events. It must return quickly (it dedupes and enqueues). An error means
// the event was not accepted (back-pressure, shutdown); adapters whose platform retries deliveries
// let the platform retry, others tell the user.
type Sink func(ctx context.Context, ev echogate.InboundEvent) error

// Channel connects the gateway to one chat workspace. Run blocks until ctx ends or a permanent
// failure; transient disconnects are retried inside Run, with backoff. Send posts one message and
// returns its reference; it blocks until the platform accepted it (honouring rate limits) or ctx
// ends.
type Channel interface {
	Name() string // the platform name, echogate.Platform*
	Run(ctx context.Context, sink Sink) error
	Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error)
}

// Streamer is implemented by channels that can show a reply while it is generated.
// StartStream posts (or prepares) the reply message; the returned Stream coalesces deltas and
// updates the platform at the channel's bounded rate.
type Streamer interface {
	StartStream(ctx context.Context, out echogate.Outbound) (echogate.Stream, error)
}

// Editor replaces the text of a message the bot posted.
type Editor interface {
	Edit(ctx context.Context, ref echogate.MessageRef, text string) error
}

// Reactor adds and removes the bot's reactions (canonical emoji, echogate.Reaction*).
type Reactor interface {
	React(ctx context.Context, ref echogate.MessageRef, emoji string) error
	Unreact(ctx context.Context, ref echogate.MessageRef, emoji string) error
}

// Typer shows that the bot is working on a turn in conv (typing indicator, status, 👀). The
// indicator stays alive (refreshed by the channel) until stop is called or ctx ends; stop is
// idempotent and removes the indicator where the platform allows.
type Typer interface {
	StartTyping(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef) (stop func())
}

// ActivityShower is implemented by channels that show what a turn is doing (Slack thread
// status naming the running tools, Discord a status line under the streamed reply).
// StartActivity begins showing that a turn runs in conv, answering on; the pipeline uses it
// instead of StartTyping when a channel has both, and ends the view exactly when the turn ends.
type ActivityShower interface {
	StartActivity(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef) echogate.ActivityView
}

// TurnObserver is implemented by channels that show every step of a turn (the web channel streams
// them as SSE). Observe must not block: it buffers or drops according to its own bound.
type TurnObserver interface {
	ObserveTurn(ev echogate.TurnEvent)
}

// Health is implemented by channels whose connection state matters for /readyz.
type Health interface {
	// Ready reports whether the channel is connected and able to receive events, with a short
	// human-readable detail ("connected", "reconnecting: …").
	Ready() (bool, string)
}

// Downloader fetches the content of a file attached to an inbound message, with the platform's
// credentials where it needs them. It reads at most maxBytes (a larger file is an error wrapping
// echogate.ErrTooLarge, checked before downloading where the platform states the size), refuses redirects
// to other hosts and private addresses, and returns the content type the platform reported.
type Downloader interface {
	Download(ctx context.Context, att echogate.Attachment, maxBytes int64) (data []byte, mime string, err error)
}
