package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/echogate/echogate/channels"
)

// Run connects to the gateway and delivers events to sink until ctx ends; it reconnects (and
// resumes) after drops. It returns nil when ctx ends, or an error wrapping ErrUnauthorized,
// ErrDisallowedIntents, ErrSharding or ErrGatewayRejected when Discord refuses the bot for good.
// Run returns only after its goroutines (typing refreshers, stream flushers, look-ups) exited.
func (c *Channel) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return fmt.Errorf("discord: run: %w", ErrNilSink)
	}
	if !c.running.CompareAndSwap(false, true) {
		return fmt.Errorf("discord: run: %w (Run may be called once per Channel)", ErrAlreadyRunning)
	}
	c.sink.Store(&sink)
	c.runCtx.Store(&ctx)
	defer c.endRun()

	if err := c.preflight(ctx); err != nil {
		if ctx.Err() != nil {
			c.setDown("stopped")
			return nil
		}
		c.setDown(err.Error())
		return err
	}
	return c.connectLoop(ctx)
}

// endRun ends Run's life: it drops the sink, makes spawn refuse new goroutines, stops the typing
// refreshers and stream flushers and waits until every goroutine spawn started has exited.
func (c *Channel) endRun() {
	c.sink.Store(nil)
	c.goMu.Lock()
	c.closed = true
	c.goMu.Unlock()
	c.stopLife()
	c.wg.Wait()
}

// connectLoop keeps one gateway connection up until ctx ends (nil) or Discord refuses the bot
// for good (the permanent error): it opens a connection through the reconnect breaker, watches
// it while it is up, and backs off before the next attempt after a failure or a drop.
func (c *Channel) connectLoop(ctx context.Context) error {
	failures := 0
	var lastErr error
	for {
		if ctx.Err() != nil {
			c.setDown("stopped")
			return nil
		}
		done, err := c.breaker.Allow()
		if err != nil {
			if !c.waitBreaker(ctx, lastErr) {
				c.setDown("stopped")
				return nil
			}
			continue
		}
		// Drop a Disconnect signal of the previous connection: the new one is not open yet.
		select {
		case <-c.disconnected:
		default:
		}
		err = c.open(ctx)
		switch {
		case err == nil, errors.Is(err, discordgo.ErrWSAlreadyOpen):
		case ctx.Err() != nil:
			done(nil)
			c.setDown("stopped")
			return nil
		default:
			if perm := permanent(err); perm != nil {
				done(err)
				c.setDown(perm.Error())
				c.log.Error("discord: gateway refused the bot; not retrying", "err", perm, "shard", c.cfg.ShardID)
				return perm
			}
			done(err)
			failures++
			lastErr = err
			if !c.backOffAfterFailure(ctx, failures, err) {
				c.setDown("stopped")
				return nil
			}
			continue
		}
		c.markConnected()
		stable := c.watch(ctx, done)
		if ctx.Err() != nil {
			c.setDown("stopped")
			if err := c.sess.Close(); err != nil {
				c.log.Debug("discord: close gateway", "err", err)
			}
			return nil
		}
		if stable {
			failures = 0
		} else {
			failures++
			lastErr = errors.New("connection dropped before it was stable")
		}
		if !c.backOffAfterDrop(ctx, failures, stable) {
			c.setDown("stopped")
			return nil
		}
	}
}

// backOffAfterFailure reports a failed connection attempt (the failures-th in a row) and waits
// the backoff delay; false when ctx ended first.
func (c *Channel) backOffAfterFailure(ctx context.Context, failures int, err error) bool {
	wait := backoffDelay(failures, c.cfg.BackoffInitial, c.cfg.BackoffMax, c.cfg.Jitter)
	c.setDown(fmt.Sprintf("reconnecting (attempt %d failed: %v); next attempt in %s", failures, err, wait.Round(time.Millisecond)))
	c.log.Warn("discord: gateway connection failed", "err", err, "attempt", failures, "retry_in", wait, "shard", c.cfg.ShardID)
	return c.sleep(ctx, wait)
}

// backOffAfterDrop reports a lost connection and waits the backoff delay for failures (0 after a
// stable connection); false when ctx ended first.
func (c *Channel) backOffAfterDrop(ctx context.Context, failures int, stable bool) bool {
	wait := backoffDelay(failures, c.cfg.BackoffInitial, c.cfg.BackoffMax, c.cfg.Jitter)
	c.setDown(fmt.Sprintf("reconnecting: gateway connection lost; next attempt in %s", wait.Round(time.Millisecond)))
	lvl := slog.LevelWarn
	if stable {
		lvl = slog.LevelInfo // routine: Discord asks for reconnects (op 7) regularly
	}
	c.log.Log(ctx, lvl, "discord: gateway connection lost; reconnecting", "retry_in", wait, "stable", stable, "shard", c.cfg.ShardID)
	return c.sleep(ctx, wait)
}

// waitBreaker reports the open reconnect breaker (with lastErr, the last connection failure)
// and waits out its cool-down; false when ctx ended first.
func (c *Channel) waitBreaker(ctx context.Context, lastErr error) bool {
	detail := fmt.Sprintf("reconnect breaker open after %d connection failures within %s; next attempt after the %s cool-down", c.cfg.BreakerFailures, c.cfg.BreakerWindow, c.cfg.BreakerCooldown)
	if lastErr != nil {
		detail += " (last error: " + lastErr.Error() + ")"
	}
	c.setDown(detail)
	c.log.Error("discord: "+detail, "shard", c.cfg.ShardID)
	return c.sleep(ctx, c.cfg.BreakerCooldown+c.cfg.Jitter(c.cfg.BackoffInitial))
}

// watch waits while the connection is up: it reports the connection to the breaker once it has
// been stable for StableAfter (or as a failure if it drops before), checks heartbeat ACKs every
// HealthInterval and replaces a zombie connection. It returns when the connection dropped (or
// ctx ended), reporting whether the connection had become stable.
func (c *Channel) watch(ctx context.Context, done func(error)) (stable bool) {
	stableC := c.clock.After(c.cfg.StableAfter)
	tick := c.clock.After(c.cfg.HealthInterval)
	defer func() {
		if !stable {
			done(errors.New("connection dropped before it was stable"))
		}
	}()
	for {
		select {
		case <-ctx.Done():
			if !stable {
				done(nil) // shutting down is not a failure
				stable = true
			}
			return stable
		case <-stableC:
			stable = true
			done(nil)
		case <-c.disconnected:
			if c.stillConnected() {
				continue // a late signal of an earlier connection
			}
			return stable
		case <-tick:
			tick = c.clock.After(c.cfg.HealthInterval)
			if ok, detail := c.checkHeartbeat(); !ok {
				c.log.Warn("discord: replacing zombie gateway connection", "detail", detail, "shard", c.cfg.ShardID)
				c.setDown(detail)
				// Any close code but 1000/1001 keeps the session resumable.
				if err := c.sess.CloseWithCode(websocket.CloseServiceRestart); err != nil {
					c.log.Debug("discord: close zombie connection", "err", err)
				}
				return stable
			}
		}
	}
}

// sleep waits d on the clock; it reports false when ctx ended first.
func (c *Channel) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-c.clock.After(d):
		return true
	}
}

// preflight checks the token and the session start limit with GET /gateway/bot, retrying
// transient failures with backoff until ctx ends. A rejected token is permanent.
func (c *Channel) preflight(ctx context.Context) error {
	c.setDown("connecting: checking the bot token")
	for attempt := 1; ; attempt++ {
		var gb *discordgo.GatewayBotResponse
		err := c.call(ctx, "get gateway", true, func(opts ...discordgo.RequestOption) error {
			var err error
			gb, err = c.sess.GatewayBot(opts...)
			return err
		})
		if err == nil {
			if gb.Shards > c.cfg.ShardCount {
				c.log.Warn("discord: Discord recommends more shards than configured", "recommended", gb.Shards, "shard_count", c.cfg.ShardCount)
			}
			lim := gb.SessionStartLimit
			if lim.Total > 0 && lim.Remaining == 0 {
				wait := time.Duration(lim.ResetAfter) * time.Millisecond
				c.setDown(fmt.Sprintf("waiting %s for Discord's daily session start limit (%d) to reset", wait, lim.Total))
				c.log.Warn("discord: session start limit exhausted; waiting", "wait", wait)
				if !c.sleep(ctx, wait) {
					return ctx.Err()
				}
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrUnauthorized) {
			return err
		}
		wait := backoffDelay(attempt, c.cfg.BackoffInitial, c.cfg.BackoffMax, c.cfg.Jitter)
		c.setDown(fmt.Sprintf("cannot reach the Discord API at %s: %v; retrying in %s", c.cfg.APIURL, err, wait.Round(time.Millisecond)))
		c.log.Warn("discord: gateway discovery failed", "err", err, "retry_in", wait)
		if !c.sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// open runs one Session.Open, bounded by OpenTimeout and ctx: when either ends first, the dialed
// connection is closed so Open returns.
func (c *Channel) open(ctx context.Context) error {
	c.setDownIfNotConnected("connecting to the gateway")
	res := make(chan error, 1)
	go func() { res <- c.sess.Open() }()
	var err error
	select {
	case err = <-res:
		return err
	case <-ctx.Done():
		c.conns.closeLatest()
		err = <-res
		if err == nil {
			_ = c.sess.Close()
		}
		return ctx.Err()
	case <-c.clock.After(c.cfg.OpenTimeout):
		c.conns.closeLatest()
		if err = <-res; err == nil {
			return nil // it made it after all; a broken one drops and is replaced
		}
		return fmt.Errorf("%w after %s: %v", ErrOpenTimeout, c.cfg.OpenTimeout, err)
	}
}

// permanent maps errors that retrying cannot fix to a descriptive error, or returns nil.
func permanent(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case 4004:
			return fmt.Errorf("discord: gateway: %w (close 4004 authentication failed): set DISCORD_BOT_TOKEN to the current bot token (Developer Portal → Bot → Reset Token)", ErrUnauthorized)
		case 4013, 4014:
			return fmt.Errorf("discord: gateway: %w (close %d %s): enable MESSAGE CONTENT INTENT under Developer Portal → your application → Bot → Privileged Gateway Intents, or set discord.message_content: off (mentions and DMs work without it)", ErrDisallowedIntents, ce.Code, ce.Text)
		case 4010, 4011:
			return fmt.Errorf("discord: gateway: %w (close %d %s): set discord.shard_count to the number of shards Discord recommends and shard_id in [0, shard_count)", ErrSharding, ce.Code, ce.Text)
		case 4012:
			return fmt.Errorf("discord: gateway: %w (close 4012 invalid API version %s): upgrade echogate", ErrGatewayRejected, ce.Text)
		}
	}
	if errors.Is(err, ErrUnauthorized) || errors.Is(err, discordgo.ErrUnauthorized) || restStatus(err) == http.StatusUnauthorized {
		return fmt.Errorf("discord: gateway: %w: set DISCORD_BOT_TOKEN to the current bot token (Developer Portal → Bot → Reset Token)", ErrUnauthorized)
	}
	if errors.Is(err, discordgo.ErrWSShardBounds) {
		return fmt.Errorf("discord: gateway: %w: %v", ErrSharding, err)
	}
	return nil
}

// onDisconnect signals Run's loop. It runs synchronously inside discordgo's Close.
func (c *Channel) onDisconnect(_ *discordgo.Session, _ *discordgo.Disconnect) {
	select {
	case c.disconnected <- struct{}{}:
	default:
	}
}
