package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/echogate/echogate/internal/backoff"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/ids"
	"github.com/echogate/echogate/internal/netguard"
)

// webhookPlatform is the platform name of webhook deliveries (deliver: webhook:https://…).
const webhookPlatform = "webhook"

// Webhook delivery's bounds: attempts per message and the first back-off (doubled each time).
const (
	webhookAttempts   = 4
	webhookBackoff    = time.Second
	webhookBackoffMax = 8 * time.Second
	webhookTimeout    = 15 * time.Second
)

// webhookReplier posts a scheduled run's messages to its job's HTTPS webhook: a JSON body
// signed with the job's secret (X-Echogate-Signature: sha256=HMAC-SHA256(secret,
// "<X-Echogate-Timestamp>.<body>")), with the turn as X-Echogate-Delivery so a receiver can drop
// a retried copy. 5xx, 429 and network errors are retried with back-off; an address the
// SSRF guard refuses (http_fetch's rules: no private, loopback or link-local addresses unless
// tools.http_fetch.allow_private) is not. The conversation's channel is the job's id.
type webhookReplier struct {
	target func(ctx context.Context, jobID string) (url, secret string, err error)
	client *http.Client
	now    func() time.Time
	// wait sleeps between attempts (tests replace it).
	wait func(ctx context.Context, d time.Duration) error
}

func newWebhookReplier(target func(ctx context.Context, jobID string) (string, string, error), tlsCfg *tls.Config, guard *netguard.Guard) *webhookReplier {
	tr := &http.Transport{DialContext: guard.DialContext, TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: webhookTimeout, MaxIdleConns: 8, IdleConnTimeout: 30 * time.Second}
	return &webhookReplier{target: target, now: time.Now,
		client: &http.Client{Transport: tr, Timeout: webhookTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("webhook: redirects are not followed; give the final URL")
		}},
		wait: func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}}
}

// Send delivers out; it returns the delivery's id once the webhook answered 2xx.
func (w *webhookReplier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	job := out.Conversation.Channel
	url, secret, err := w.target(ctx, job)
	if err != nil {
		return echogate.MessageRef{}, fmt.Errorf("webhook: job %s: %w", job, err)
	}
	id := out.Turn
	if id == "" {
		id = ids.New("wh_")
	}
	kind := "reply"
	switch out.Kind {
	case echogate.OutNotice:
		kind = "notice"
	case echogate.OutApprovalPrompt:
		kind = "approval_prompt"
	}
	body, err := json.Marshal(map[string]string{"job": job, "kind": kind, "text": out.Text, "turn": out.Turn, "session": string(out.Session), "delivery": id})
	if err != nil {
		return echogate.MessageRef{}, err
	}
	retries := backoff.Policy{Initial: webhookBackoff, Max: webhookBackoffMax}
	for attempt := 1; ; attempt++ {
		retry, err := w.post(ctx, url, secret, id, body)
		if err == nil {
			return echogate.MessageRef{Platform: webhookPlatform, Channel: job, ID: id}, nil
		}
		if !retry || attempt == webhookAttempts {
			return echogate.MessageRef{}, fmt.Errorf("webhook: job %s: %w", job, err)
		}
		if werr := w.wait(ctx, retries.Step(attempt)); werr != nil { // 1s, 2s, 4s
			return echogate.MessageRef{}, fmt.Errorf("webhook: job %s: %w (last: %v)", job, werr, err)
		}
	}
}

// post makes one attempt; retry says whether another may succeed.
func (w *webhookReplier) post(ctx context.Context, url, secret, id string, body []byte) (retry bool, err error) {
	ts := strconv.FormatInt(w.now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "echogate-webhook")
	req.Header.Set("X-Echogate-Timestamp", ts)
	req.Header.Set("X-Echogate-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set("X-Echogate-Delivery", id)
	resp, err := w.client.Do(req)
	if err != nil {
		var refused *netguard.RefusedError
		return !errors.As(err, &refused) && ctx.Err() == nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return false, fmt.Errorf("%s answered %s", url, resp.Status)
}
