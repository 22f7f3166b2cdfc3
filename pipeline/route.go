package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/echogate/echogate"
)

// The routing of an event before any turn runs, in the order it happens. Submit (a channel's
// Sink) decides what is never queued: the access rules refuse (access.go), a stop stops the
// session's running turn at once (isStop; who may: authority_running.go), the answer to a
// running tool call's question goes to it (elicit_answer.go), a full mailbox
// refuses (mailboxKey picks the mailbox), and the dedupe claim drops a duplicate. A worker
// then hands each queued event to handle (handle.go: a replay is recovered first, the session
// record written), which calls route: the session's paused turn takes it (paused.go decides,
// authority_paused.go says who may), or a command (commands.go), or it is a stop with nothing
// running, or empty; else it starts a turn (runUserTurn, per-user limits). notify and fail
// are the short answers these paths give.

// Submit accepts one inbound event: it is the channels' Sink. It returns quickly: the event is
// recorded (dedupe) and queued for its session; a duplicate is dropped silently (nil). A full
// mailbox returns ErrMailboxFull (nothing recorded, so a platform retry is welcome); after
// shutdown began it returns ErrShuttingDown. A stop command stops the session's running turn at
// once.
func (p *Pipeline) Submit(ctx context.Context, ev echogate.InboundEvent) error {
	switch p.state.Load() {
	case stateNew:
		return ErrNotRunning
	case stateClosing:
		p.d.Metrics.Reject(ev.Conversation.Platform, "shutdown")
		return ErrShuttingDown
	}
	if ev.ID == "" || ev.Conversation.Platform == "" || ev.SessionKey() == "" {
		return fmt.Errorf("%w: id, platform and conversation are required (got id=%q platform=%q)", ErrInvalidEvent, ev.ID, ev.Conversation.Platform)
	}
	if ev.ReceivedAt.IsZero() {
		ev.ReceivedAt = p.cfg.Now()
	}
	platform := ev.Conversation.Platform
	p.d.Metrics.Event(platform, ev.Kind.String())
	if p.refused(ctx, &ev) {
		return refusedRun(&ev) // access rules (access.go): nothing recorded, nothing queued
	}
	p.promptSession(ctx, &ev) // a decision on a scheduled run's prompt (scheduled.go)
	key := mailboxKey(ev)
	sh := p.shardFor(key)

	if isStop(&ev) && p.submitStop(ctx, key, ev) {
		return nil // a turn runs here: stopped, or its sender told who can (authority)
	}
	if p.answerQuestion(ctx, &ev) {
		return nil // the answer to a running tool call's question (elicit_answer.go)
	}
	mb, fast, err := p.reserve(sh, key, platform, p.shared.claimLocker != nil && key == ev.SessionKey())
	if err != nil {
		return err
	}
	return p.recordAndQueue(ctx, sh, mb, ev, fast)
}

// recordAndQueue claims ev (dedupe; with fast, its session's lock too) in the place reserve
// held in mb, and queues it unless it is a duplicate or shutdown began.
func (p *Pipeline) recordAndQueue(ctx context.Context, sh *shard, mb *mailbox, ev echogate.InboundEvent, fast bool) error {
	key, platform := mb.key, ev.Conversation.Platform
	payload, err := json.Marshal(ev)
	var first bool
	var lk *claimedLock // the session's lock taken with the claim (fast)
	if err == nil {
		first, lk, err = p.claim(ctx, &ev, payload, key, fast)
	}
	if err == nil && first && isStop(&ev) {
		// The turn may run on another replica, which polls the stored stops; the event still
		// queues here, for a paused turn it cancels.
		p.requestStop(ctx, ev)
	}

	sh.mu.Lock()
	mb.reserved--
	if fast {
		mb.locking = false
	}
	if err != nil || !first {
		p.wakeLocked(sh, mb) // events queued while this one was being claimed
		p.reapLocked(sh, mb)
		sh.mu.Unlock()
		if err != nil {
			return fmt.Errorf("pipeline: record event %s: %w", ev.ID, err)
		}
		p.d.Metrics.Duplicate(platform)
		p.log.Debug("duplicate event dropped", "event_id", ev.ID, "session", key, "channel", platform)
		return nil
	}
	if p.state.Load() == stateClosing {
		// Recorded but not queued: it is replayed at the next start.
		p.wakeLocked(sh, mb)
		p.reapLocked(sh, mb)
		sh.mu.Unlock()
		if lk != nil {
			lk.unlock()
		}
		return ErrShuttingDown
	}
	var cur *turnCtl // the turn a new message may interrupt
	if p.cfg.OnBusy == OnBusyInterrupt && ev.Kind != echogate.KindReaction {
		cur = mb.cur
	}
	if fast {
		// It arrived before anything queued while it was claimed: it goes first.
		mb.queue = append([]item{{ev: ev, lock: lk}}, mb.queue...)
		p.d.Metrics.Mailbox(1, 0)
		p.wakeLocked(sh, mb)
	} else {
		p.enqueueLocked(sh, mb, item{ev: ev})
	}
	sh.mu.Unlock()
	if cur != nil {
		p.interrupt(ctx, key, ev, cur)
	}
	return nil
}

// claim records the event (dedupe) and reports whether this is its first claim. fast (an idle
// session, a ClaimLocker store) takes the session's lock in the claim's round trip too: lk is
// that lock, nil when it was not taken (another replica holds the session; drain waits for it).
func (p *Pipeline) claim(ctx context.Context, ev *echogate.InboundEvent, payload []byte, key echogate.SessionKey, fast bool) (first bool, lk *claimedLock, err error) {
	if !fast {
		first, err = p.d.Store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt)
		return first, nil, err
	}
	first, unlock, locked, pend, err := p.shared.claimLocker.ClaimEventLocking(ctx, ev.DedupeKey(), payload, ev.ReceivedAt, key)
	if err == nil && locked {
		lk = &claimedLock{unlock: unlock, pend: pend}
	}
	return first, lk, err
}

// reserve holds a place in key's mailbox (made on first use) while the event's claim is
// written, so a full mailbox refuses before anything is recorded; the caller gives it back
// (mb.reserved--) under sh.mu. With mayLock, an idle mailbox (no worker, nothing queued or
// being claimed) is marked locking and fast is true: the caller claims the event with the
// session's lock and clears the mark under sh.mu.
func (p *Pipeline) reserve(sh *shard, key echogate.SessionKey, platform string, mayLock bool) (mb *mailbox, fast bool, err error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	mb = sh.boxes[key]
	if mb == nil {
		mb = &mailbox{key: key}
		sh.boxes[key] = mb
		p.d.Metrics.Mailbox(0, 1)
	}
	if len(mb.queue)+mb.reserved >= p.cfg.MailboxSize {
		p.d.Metrics.Reject(platform, "mailbox_full")
		// A RetryAfterError: channels answer it as back-pressure (HTTP 429, "busy, retry").
		return nil, false, &echogate.RetryAfterError{After: time.Second, Err: fmt.Errorf("session %s: %w", key, ErrMailboxFull)}
	}
	fast = mayLock && !mb.active && !mb.locking && len(mb.queue) == 0 && mb.reserved == 0
	mb.reserved++
	if fast {
		mb.locking = true
	}
	return mb, fast, nil
}

// isStop reports whether ev asks to stop the running turn.
func isStop(ev *echogate.InboundEvent) bool {
	if ev.Actor.IsBot && !ev.Actor.IsSelf {
		return false
	}
	if ev.Kind == echogate.KindReaction {
		return ev.Reaction == echogate.ReactionStop
	}
	return strings.EqualFold(strings.TrimSpace(ev.Text), "stop") || isStopCommand(ev.Text)
}

// mailboxKey is the mailbox an event queues in: its session's, except for a command that came
// as an interaction and reads nothing of the conversation (usage, help): it gets a mailbox of
// its own, so a running turn does not hold its private answer up (Slack's response_url and
// Discord's interaction token expire).
func mailboxKey(ev echogate.InboundEvent) echogate.SessionKey {
	if ev.Interaction != "" && ev.Kind != echogate.KindReaction {
		if name, _, ok := parseCommand(ev.Text); ok && (name == cmdUsage || name == cmdHelp || name == cmdSchedules || name == cmdMCP) {
			return "command:" + ev.SessionKey()
		}
	}
	return ev.SessionKey()
}

// isStopCommand reports whether text is the stop command ("/stop", "!stop").
func isStopCommand(text string) bool {
	name, _, ok := parseCommand(text)
	return ok && name == cmdStop
}

// route sends the event where it belongs: to the session's paused turn, to a command, or to a
// new turn.
func (p *Pipeline) route(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev *echogate.InboundEvent, opts []turnOption) {
	pend, err := p.routePending(ctx, ctl, ev.SessionKey())
	switch {
	case err == nil:
		p.handlePaused(ctx, ctl, log, ev, pend)
		return
	case !errors.Is(err, echogate.ErrNotFound):
		log.Error("pipeline: load pending turn", "err", err)
		p.fail(ctx, log, ev, "", err)
		return
	}
	switch {
	case ev.Actor.IsSelf:
		return // an internal event for a pause that no longer exists
	case ev.Kind == echogate.KindReaction:
		return // reactions only matter on approval prompts (stop is handled by Submit)
	case p.command(ctx, ctl, log, ev):
		return
	case isStop(ev):
		return // nothing is running
	case strings.TrimSpace(ev.Text) == "" && len(ev.Attachments) == 0:
		return
	}
	p.runUserTurn(ctx, ctl, log, ev, []echogate.Message{userMessage(ev)}, opts...) // per-user limits (peruser.go)
}

// notify posts a short notice into the event's conversation.
func (p *Pipeline) notify(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, text string) {
	rep := p.d.Repliers[ev.Conversation.Platform]
	if rep == nil {
		return
	}
	if _, err := rep.Send(ctx, echogate.Outbound{Kind: echogate.OutNotice, Conversation: ev.Conversation, ReplyTo: ev.Message, Text: text, Session: ev.SessionKey(),
		Interaction: ev.Interaction}); err != nil {
		log.Error("pipeline: post notice", "err", err)
	}
}

// fail answers with the fallback text after an unrecoverable error before the turn ran.
func (p *Pipeline) fail(ctx context.Context, log *slog.Logger, ev *echogate.InboundEvent, turnID string, err error) {
	p.d.Metrics.DegradedAnswer()
	log.Error("turn failed", "turn", turnID, "err", err)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	text := p.cfg.FallbackText
	if turnID != "" {
		text += " (ref " + turnID + ")"
	}
	p.notify(cctx, log, *ev, text)
}

// requestStop stores a stop of key's running turn for the replica that may run it (with a
// store shared by replicas); this process's own running turns are stopped by Submit at once.
func (p *Pipeline) requestStop(ctx context.Context, ev echogate.InboundEvent) {
	if p.shared.stops == nil {
		return
	}
	if err := p.shared.stops.RequestStop(ctx, ev.SessionKey(), ev.Actor.QualifiedID(ev.Conversation.Platform)); err != nil {
		p.log.Warn("pipeline: store stop request for the other replicas", "session", ev.SessionKey(), "event_id", ev.ID, "err", err)
	}
}
