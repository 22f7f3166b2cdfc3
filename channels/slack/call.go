package slack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echogate/echogate"
	"github.com/slack-go/slack"
)

// APIError is a Web API answer with ok:false. errors.Is(err, ErrSlackAPI) matches it.
type APIError struct {
	Method string
	Code   string // Slack's error code, e.g. "channel_not_found"
}

func (e *APIError) Error() string   { return "api error: " + e.Code }
func (e *APIError) Is(t error) bool { return t == ErrSlackAPI }

// benignCodes are ok:false answers that mean "already done"; they are not logged as errors.
var benignCodes = map[string]bool{"already_reacted": true, "no_reaction": true}

func apiCode(err error) (string, bool) {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code, true
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err, true
	}
	return "", false
}

// retryAfterOf reports the wait asked by a 429 (RateLimitedError, or a 429 status without a
// usable Retry-After, or ok:false "ratelimited").
func retryAfterOf(err error) (time.Duration, bool) {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return max(rl.RetryAfter, time.Second), true
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code == 429 {
		return time.Second, true
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && (se.Err == "ratelimited" || se.Err == "rate_limited") {
		return time.Second, true
	}
	return 0, false
}

// logAPIError logs a failed Web API call with the method and Slack's error code.
func (c *Channel) logAPIError(method, ch string, err error) {
	if code, ok := apiCode(err); ok {
		if benignCodes[code] {
			c.log.Debug("slack api call: nothing to do", "method", method, "slack_channel", ch, "error", code)
			return
		}
		c.log.Error("slack api call failed", "method", method, "slack_channel", ch, "error", code)
		return
	}
	c.log.Warn("slack api call failed", "method", method, "slack_channel", ch, "error", err)
}

// errLowBudget is returned for a low-priority call skipped because the channel's budget is
// reserved for finals or blocked by a Retry-After. Callers skip the update and try later.
var errLowBudget = errors.New("outbound budget reserved for final replies")

const maxAttempts = 5

// call runs one idempotent Web API call for Slack channel ch within the channel's budget:
// high priority waits for a slot, low priority is skipped (errLowBudget) when none is free.
// 429s block the channel for Retry-After and are retried (high priority only); connection
// errors, timeouts and 5xx are retried with backoff; ok:false is logged and returned as an
// *APIError. Only use it for calls that are safe to repeat.
func (c *Channel) call(ctx context.Context, method, ch string, prio priority, fn func(ctx context.Context) error) error {
	bo := backoff{initial: 500 * time.Millisecond, max: 8 * time.Second}
	var last error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if err := c.acquire(ctx, ch, prio); err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
		err := fn(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("slack: %s in %s: %w", method, ch, ctx.Err())
		}
		last = err
		if ra, ok := retryAfterOf(err); ok {
			c.budgets.block(ch, ra)
			c.log.Warn("slack rate limited", "method", method, "slack_channel", ch, "retry_after", ra)
			if prio == prioLow {
				return fmt.Errorf("slack: %s in %s: %w", method, ch, &echogate.RetryAfterError{After: ra, Err: err})
			}
			continue
		}
		if code, ok := apiCode(err); ok {
			c.logAPIError(method, ch, err)
			return fmt.Errorf("slack: %s in %s: %w", method, ch, &APIError{Method: method, Code: code})
		}
		if prio == prioLow {
			return fmt.Errorf("slack: %s in %s: %w", method, ch, err)
		}
		wait := bo.next()
		c.log.Warn("slack api call failed, retrying", "method", method, "slack_channel", ch, "error", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return fmt.Errorf("slack: %s in %s: %w", method, ch, ctx.Err())
		case <-c.cfg.Clock.After(wait):
		}
	}
	return fmt.Errorf("slack: %s in %s: giving up after %d attempts: %w", method, ch, maxAttempts, last)
}

func (c *Channel) acquire(ctx context.Context, ch string, prio priority) error {
	if prio == prioLow {
		if !c.budgets.tryLow(ch) {
			return errLowBudget
		}
		return nil
	}
	if err := c.budgets.waitHigh(ctx, ch); err != nil {
		return fmt.Errorf("slack: waiting for the outbound budget of %s: %w", ch, err)
	}
	return nil
}
