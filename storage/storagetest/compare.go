// Comparison helpers of the conformance suite: each names what it compared.

package storagetest

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if want.IsZero() {
		if !got.IsZero() {
			t.Errorf("%s = %v, want the zero time", what, got)
		}
		return
	}
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
	if got.Location() != time.UTC {
		t.Errorf("%s location = %v, want UTC", what, got.Location())
	}
}

func checkSession(t *testing.T, what string, got, want echogate.SessionInfo) {
	t.Helper()
	checkTime(t, what+".CreatedAt", got.CreatedAt, want.CreatedAt)
	checkTime(t, what+".UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func checkTurn(t *testing.T, what string, got, want echogate.TurnRecord) {
	t.Helper()
	checkTime(t, what+".StartedAt", got.StartedAt, want.StartedAt)
	checkTime(t, what+".EndedAt", got.EndedAt, want.EndedAt)
	got.StartedAt, got.EndedAt, want.StartedAt, want.EndedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func checkPending(t *testing.T, what string, got, want echogate.PendingTurn) {
	t.Helper()
	checkTime(t, what+".CreatedAt", got.CreatedAt, want.CreatedAt)
	checkTime(t, what+".ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	if !bytes.Equal(got.State, want.State) {
		t.Errorf("%s.State = %q, want %q", what, got.State, want.State)
	}
	got.CreatedAt, got.ExpiresAt, want.CreatedAt, want.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	got.State, want.State = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func checkUsageRecord(t *testing.T, what string, got, want echogate.UsageRecord) {
	t.Helper()
	checkTime(t, what+".At", got.At, want.At)
	got.At, want.At = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func checkNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("%s error = %v, want one wrapping echogate.ErrNotFound", what, err)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func userMsg(text string) echogate.Message {
	return echogate.Message{Role: echogate.RoleUser, Content: text}
}

func contents(h []echogate.StoredMessage) []string {
	out := make([]string, len(h))
	for i, m := range h {
		out[i] = m.Message.Content
	}
	return out
}
