package slack

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/echogate/echogate/channels"
)

// recovered is deferred first on every send, stream and edit path and in every goroutine the
// channel starts: a panic there becomes an error for that call (when err is not nil), a log line
// with the stack and a Config.OnPanic report, instead of the end of the process. It must be the
// deferred function itself (recover works only there).
func (c *Channel) recovered(err *error, path string) {
	r := recover()
	if r == nil {
		return
	}
	c.log.Error("slack: recovered a panic", "path", path, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	if c.cfg.OnPanic != nil {
		c.cfg.OnPanic(path)
	}
	if err != nil {
		*err = fmt.Errorf("slack: %s: internal error (recovered panic: %v)", path, r)
	}
}

// handleRecovered handles one inbound job; a panic ends that job only, not the worker.
func (c *Channel) handleRecovered(ctx context.Context, j job, sink channels.Sink) {
	defer c.recovered(nil, "inbound event")
	c.handle(ctx, j, sink)
}
