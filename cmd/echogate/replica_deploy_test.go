package main

import (
	"testing"
	"time"
)

// TestRollingDeploy: while the replica chaos load runs, every replica in turn gets SIGTERM (its
// readiness goes false, it drains within agent.drain_timeout and exits 0) and a new process
// takes its place, as a rolling deploy does. Nothing is lost or answered twice, no turn is left
// running or paused; the latency the deploy adds to an answer is reported.
func TestRollingDeploy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three gateway binaries and replaces them")
	}
	r := newRChaos(t, testDatabase(t, "direct"))
	if *rchaosDeploys > 0 && *rchaosMessages > 1 {
		r.hold = make(chan struct{}) // the sessions' last messages wait for the deploys to end
	}
	done, errs := r.drive()
	total := *rchaosSessions * *rchaosMessages
	var from, to time.Time
	deployed := 0
	pace := time.NewTicker(50 * time.Millisecond)
	defer pace.Stop()
	for running := true; running; {
		select {
		case <-pace.C:
			// A baseline first: the deploys start once a quarter of the messages are answered.
			if deployed >= *rchaosDeploys || int(r.answered.Load()) < total/4 {
				continue
			}
			if from.IsZero() {
				from = time.Now()
			}
			for i := range rchaosReplicas {
				r.replace(i)
			}
			deployed++
			to = time.Now()
			t.Logf("rolling deploy %d done in %s", deployed, to.Sub(from).Round(time.Millisecond))
			if deployed == *rchaosDeploys && r.hold != nil {
				close(r.hold)
			}
		case <-done:
			running = false
		}
	}
	for err := range errs {
		t.Error(err)
	}
	if deployed < *rchaosDeploys {
		t.Errorf("%d rolling deploys, want %d (the load ended first: raise -rchaos.messages)", deployed, *rchaosDeploys)
	}
	r.check("rolling deploy", 0)
	r.reportDeployLatency(from, to)
}

// replace stops replica i with SIGTERM (the load balancer sees its readiness fail and stops
// sending), waits for it to exit, starts a new process in its place and waits until the load
// balancer counts it ready, as a rolling deploy does before it replaces the next (Kubernetes:
// the new pod Ready before the next old one is terminated).
func (r *rchaos) replace(i int) {
	r.t.Helper()
	r.rs.mu.Lock()
	g := r.rs.slots[i]
	r.rs.mu.Unlock()
	began := time.Now()
	g.stop() // SIGTERM; fails the test unless it exits 0 within 40s
	r.rs.set(i, nil)
	r.t.Logf("replica %d: SIGTERM to exit in %s", i, time.Since(began).Round(time.Millisecond))
	r.start(i)
	r.waitBalancerReady(i)
}

// reportDeployLatency logs the answer latency of the messages sent during the deploy next to
// the ones sent outside it.
func (r *rchaos) reportDeployLatency(from, to time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var during, outside []time.Duration
	for _, l := range r.latency {
		if l.tool {
			continue // a tool message waits for a human's approval too
		}
		d := l.answered.Sub(l.sent)
		if !l.sent.Before(from) && l.sent.Before(to) {
			during = append(during, d)
		} else {
			outside = append(outside, d)
		}
	}
	r.t.Logf("rolling deploy: answer latency of plain messages sent during the deploy (%d): median %s, p95 %s, max %s; outside it (%d): median %s, p95 %s, max %s",
		len(during), percentile(during, 50).Round(time.Millisecond), percentile(during, 95).Round(time.Millisecond), percentile(during, 100).Round(time.Millisecond),
		len(outside), percentile(outside, 50).Round(time.Millisecond), percentile(outside, 95).Round(time.Millisecond), percentile(outside, 100).Round(time.Millisecond))
}
