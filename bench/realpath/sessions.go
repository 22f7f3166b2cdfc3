package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// sessionLoad is the load generator's sessions on one endpoint: each posts turn after turn
// until the load stops or a turn fails, and the first failure stops them all. The turns that
// end while measuring is set are counted and their latencies kept.
type sessionLoad struct {
	b         *bench
	c         *http.Client
	ctx       context.Context
	cancel    context.CancelFunc
	measuring atomic.Bool
	counted   atomic.Int64
	wg        sync.WaitGroup
	mu        sync.Mutex
	lat       []time.Duration
	firstErr  error
}

// newSessionLoad returns a load on b's gateway for up to conns sessions; stop ends it.
func newSessionLoad(b *bench, conns int) *sessionLoad {
	ctx, cancel := context.WithCancel(b.ctx)
	return &sessionLoad{b: b, c: newClient(conns), ctx: ctx, cancel: cancel}
}

// session starts a session named name: it joins after join, then posts its messages, each
// gap() after the previous one was sent (nil gap: as soon as it is answered).
func (l *sessionLoad) session(name string, join time.Duration, gap func() time.Duration) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if !sleepCtx(l.ctx, join) {
			return
		}
		for n := 0; l.ctx.Err() == nil; n++ {
			sent := time.Now()
			d, err := chatTurn(l.ctx, l.c, l.b.base, name, fmt.Sprintf("%smessage %d", slowPrefix, n))
			if err != nil {
				l.fail(err)
				return
			}
			atomic.AddInt64(&l.b.turns, 1)
			if l.measuring.Load() {
				l.counted.Add(1)
				l.mu.Lock()
				l.lat = append(l.lat, d)
				l.mu.Unlock()
			}
			if gap != nil && !sleepCtx(l.ctx, time.Until(sent.Add(gap()))) {
				return
			}
		}
	}()
}

// window is what one measuring window saw: its length, the gateway's CPU, the model server's
// and this process's CPU, and the gateway's memory peak.
type window struct {
	elapsed, cpu, others time.Duration
	peak                 memInfo
}

// measure counts the turns that end in the next d (their latencies kept) and samples the
// gateway's memory meanwhile (what names the -profile snapshot taken halfway).
func (l *sessionLoad) measure(d time.Duration, what string) window {
	b := l.b
	cpu0, _ := cpuTime(b.gw.pid())
	other0 := b.othersCPU()
	l.measuring.Store(true)
	began := time.Now()
	peak := b.sampleMem(l.ctx, d, what)
	l.measuring.Store(false)
	w := window{elapsed: time.Since(began), peak: peak}
	cpu1, _ := cpuTime(b.gw.pid())
	w.cpu, w.others = cpu1-cpu0, b.othersCPU()-other0
	return w
}

// fail records a turn's error, unless the load was stopping anyway, and stops the load.
func (l *sessionLoad) fail(err error) {
	if l.ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	if l.firstErr == nil {
		l.firstErr = err
	}
	l.mu.Unlock()
	l.cancel()
}

// stop ends the load, waits for its sessions and returns the measured turns' latencies,
// sorted, and the first failure.
func (l *sessionLoad) stop() ([]time.Duration, error) {
	l.cancel()
	l.wg.Wait()
	slices.Sort(l.lat)
	return l.lat, l.firstErr
}

// sleepCtx waits d or until ctx ends, and reports whether the wait ran its course.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
