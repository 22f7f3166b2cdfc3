package postgres_test

import (
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/storage/postgres"
)

// TestRecentStopsFromNotifications: on a direct connection a replica learns of another's stop
// by LISTEN/NOTIFY and answers RecentStops from memory, without a query per poll.
func TestRecentStopsFromNotifications(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := openStore(t, postgres.Config{Schema: schema, MaxConns: 4, MaxLockConns: 1})
	tc := &tripCounter{}
	b := openStore(t, postgres.Config{Schema: schema, MaxConns: 4, MaxLockConns: 1, Tracer: tc})
	ctx := ctxT(t)
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RecentStops(ctx, stopWindow); err != nil { // starts b's watch
		t.Fatal(err)
	}
	for {
		ch, live := b.StopsChanged()
		if live {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("b's stops watch did not go live")
		}
	}
	ch, _ := b.StopsChanged()
	key := echogate.SessionKey("web:stopme")
	if err := a.RequestStop(ctx, key, "web:u1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("b's stops watch was not told of a's stop")
	}
	tc.reset()
	for range 5 {
		stops, err := b.RecentStops(ctx, stopWindow)
		if err != nil || len(stops) != 1 || stops[0].Session != key || stops[0].Actor != "web:u1" || stops[0].ID == 0 {
			t.Fatalf("RecentStops on b = %+v, %v, want a's one stop of %s", stops, err, key)
		}
	}
	if n, sql := tc.get(); n != 0 {
		t.Errorf("5 polls of RecentStops cost %d statements %v, want 0 (answered from the watch)", n, sql)
	}
}

const stopWindow = 3 * time.Second // as the pipeline polls
