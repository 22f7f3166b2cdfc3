package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/netguard"
)

// A webhook delivery is signed (HMAC-SHA256 of timestamp.body with the job's secret), carries
// the turn as its idempotency key, and is retried with back-off on 5xx until it is taken.
func TestWebhookDeliveryIsSignedAndRetried(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	var sigs, stamps, ids []string
	status := []int{503, 502, 200}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, b)
		sigs, stamps, ids = append(sigs, r.Header.Get("X-Echogate-Signature")), append(stamps, r.Header.Get("X-Echogate-Timestamp")), append(ids, r.Header.Get("X-Echogate-Delivery"))
		w.WriteHeader(status[len(bodies)-1])
	}))
	defer srv.Close()
	var waits []time.Duration
	w := newWebhookReplier(func(_ context.Context, job string) (string, string, error) {
		return srv.URL + "/hook", "s3cret", nil
	}, srv.Client().Transport.(*http.Transport).TLSClientConfig, netguard.NewGuard(true, nil))
	w.wait = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	ref, err := w.Send(context.Background(), echogate.Outbound{Kind: echogate.OutReply, Conversation: echogate.ConversationRef{Platform: "webhook", Channel: "config:digest"},
		Text: "3 incidents", Turn: "t_1", Session: "schedule:config:digest:1"})
	if err != nil || ref.ID != "t_1" {
		t.Fatalf("Send = %+v, %v; want delivered with the turn as its id", ref, err)
	}
	if len(bodies) != 3 || len(waits) != 2 || waits[1] <= waits[0] {
		t.Fatalf("attempts = %d, waits %v; want 3 attempts with growing back-off", len(bodies), waits)
	}
	for i := range bodies {
		mac := hmac.New(sha256.New, []byte("s3cret"))
		mac.Write([]byte(stamps[i] + "." + string(bodies[i])))
		if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); sigs[i] != want || ids[i] != "t_1" {
			t.Errorf("attempt %d: signature %q id %q, want %q and t_1", i, sigs[i], ids[i], want)
		}
	}
	var got map[string]any
	_ = json.Unmarshal(bodies[2], &got)
	if got["text"] != "3 incidents" || got["job"] != "config:digest" {
		t.Errorf("body = %s, want the job and the text", bodies[2])
	}
}

// The webhook obeys http_fetch's SSRF rules: a private address is refused, not retried.
func TestWebhookDeliveryRefusesPrivateAddresses(t *testing.T) {
	w := newWebhookReplier(func(context.Context, string) (string, string, error) { return "https://127.0.0.1:9/hook", "s", nil }, nil, netguard.NewGuard(false, nil))
	n := 0
	w.wait = func(context.Context, time.Duration) error { n++; return nil }
	_, err := w.Send(context.Background(), echogate.Outbound{Conversation: echogate.ConversationRef{Platform: "webhook", Channel: "config:x"}, Text: "x", Turn: "t"})
	var refused *netguard.RefusedError
	if !errors.As(err, &refused) || n != 0 {
		t.Errorf("Send to 127.0.0.1 = %v after %d retries, want refused at once by the SSRF guard", err, n)
	}
}
