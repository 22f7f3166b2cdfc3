package pipeline

import "time"

// Mailbox workers are reused: a worker whose mailbox ran empty waits a while for another
// session's mailbox before it exits. A turn runs deep (stages, agent loop, model client, store),
// so a new goroutine grows its stack from the minimum several times in its first turn, copying
// it each time; a reused worker already has the stack a turn needs. At most maxIdleWorkers wait
// at once, each at most workerIdle, so what idle workers hold stays small and goes away
// after load.
const (
	maxIdleWorkers = 16
	workerIdle     = 2 * time.Second
)

// mailboxJob hands a mailbox to a waiting worker.
type mailboxJob struct {
	sh *shard
	mb *mailbox
}

// startWorkerLocked has mb drained by a waiting worker, or by a new one when none waits.
// sh.mu must be held, mb.active just set; the pipeline is running.
func (p *Pipeline) startWorkerLocked(sh *shard, mb *mailbox) {
	select {
	case p.handoff <- mailboxJob{sh, mb}:
	default:
		p.workers.Add(1)
		p.workersStarted.Add(1)
		go p.work(sh, mb)
	}
}

// work drains mailboxes, one turn at a time: mb first, then those handed to it while it
// waits (nextJob). It exits when none comes in workerIdle, when enough workers wait already, or
// when the pipeline closes.
func (p *Pipeline) work(sh *shard, mb *mailbox) {
	defer p.workers.Done()
	var idle *time.Timer
	for {
		p.drain(sh, mb)
		job, ok := p.nextJob(&idle)
		if !ok {
			return
		}
		sh, mb = job.sh, job.mb
	}
}

// nextJob waits for a mailbox to drain (see work). *idle is the worker's timer, made at its
// first wait.
func (p *Pipeline) nextJob(idle **time.Timer) (mailboxJob, bool) {
	if p.idleWorkers.Add(1) > maxIdleWorkers {
		p.idleWorkers.Add(-1)
		return mailboxJob{}, false
	}
	defer p.idleWorkers.Add(-1)
	if *idle == nil {
		*idle = time.NewTimer(workerIdle)
	} else {
		(*idle).Reset(workerIdle)
	}
	select {
	case job := <-p.handoff:
		(*idle).Stop()
		return job, true
	case <-(*idle).C:
		return mailboxJob{}, false
	case <-p.closing:
		(*idle).Stop()
		return mailboxJob{}, false
	}
}
