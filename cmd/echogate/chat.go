package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/console"
	"github.com/echogate/echogate/pipeline"
)

// cmdChat runs the terminal channel through the full pipeline: interactive, or one message with -m.
func cmdChat(ctx context.Context, e env, cfg *Config, log *slog.Logger, args []string) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	opts := chatFlags(fs)
	text, session, user, approve := opts.text, opts.session, opts.user, opts.approve
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "echogate chat: unexpected arguments %q (quote the message: chat -m \"what time is it\")\n", fs.Args())
		return 2
	}
	hardenProcess(log) // its tools' children cannot read our environment either (harden_linux.go)
	c, err := newCore(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate chat:", err)
		return 1
	}
	defer c.Close()
	con, err := console.New(console.Config{In: e.stdin, Out: e.stdout, Err: e.stderr, IsTTY: e.isTTY,
		Session: *session, User: *user, AutoApprove: *approve}, log)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate chat:", err)
		return 2
	}
	if err := c.newPipeline(map[string]pipeline.Replier{echogate.PlatformConsole: con}); err != nil {
		fmt.Fprintln(e.stderr, "echogate chat:", err)
		return 1
	}
	stopBackground := c.startBackground(ctx)
	defer stopBackground()
	c.waitMCP(ctx)
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = c.pipeline.Run(pctx)
	}()
	defer func() {
		stop()
		wg.Wait()
	}()
	<-c.pipeline.Started()

	if *text != "" {
		if _, err := con.RunOnce(ctx, c.pipeline.Submit, *text); err != nil {
			if !errors.Is(err, console.ErrTurnFailed) { // a failed turn's error is printed already
				fmt.Fprintln(e.stderr, "echogate chat:", err)
			}
			return 1
		}
		return 0
	}
	if err := con.Run(ctx, c.pipeline.Submit); err != nil && ctx.Err() == nil {
		fmt.Fprintln(e.stderr, "echogate chat:", err)
		return 1
	}
	return 0
}
