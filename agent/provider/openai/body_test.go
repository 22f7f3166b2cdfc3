package openai

import (
	"context"
	"errors"
	"io"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
)

// A request body the transport has not closed yet keeps its buffer out of the pool: the
// transport may still be writing it after the response arrived.
func TestReqBodyHeldWhileReaderOpen(t *testing.T) {
	b := getReqBody()
	b.b = append(b.b[:0], "the conversation"...)
	r := b.reader()
	b.release()
	for range 100 {
		if got := getReqBody(); got == b {
			t.Fatal("getReqBody returned a body whose reader is still open")
		}
	}
	if got, err := io.ReadAll(r); string(got) != "the conversation" || err != nil {
		t.Errorf("read %q, %v after release, want the body, nil", got, err)
	}
	r.Close()
	if n, err := r.Read(make([]byte, 8)); n != 0 || err == nil {
		t.Errorf("Read after Close = %d, %v, want 0 and an error", n, err)
	}
	if n := b.open.Load(); n != 0 {
		t.Errorf("open readers after Close = %d, want 0", n)
	}
}

// The request body is given back once the endpoint answered with a stream, not when the
// answer ends: a model streams for seconds, and every turn in flight held its conversation,
// encoded, all that time. It is given back once per attempt, never twice.
func TestGenerateGivesTheBodyBackOnceTheAnswerStreams(t *testing.T) {
	h := newHarness(t, nil)
	released := 0
	h.p.bodyReleased = func() { released++ }
	h.f.Enqueue(agenttest.Answer{Text: "an answer in several chunks", FragmentSize: 4})
	var atFirst []int
	resp, err := h.generate(t, context.Background(), userReq("hi"), func(agent.Delta) error {
		atFirst = append(atFirst, released)
		return nil
	})
	if err != nil || resp.Message.Content != "an answer in several chunks" {
		t.Fatalf("Generate = %q, %v, want the answer", resp.Message.Content, err)
	}
	if len(atFirst) < 2 || atFirst[0] != 1 {
		t.Errorf("bodies given back when each delta arrived = %v, want 1 from the first of several", atFirst)
	}
	if released != 1 {
		t.Errorf("bodies given back = %d, want 1", released)
	}
}

// A retry after the first attempt's stream began (and its body was given back) sends the same
// request again, encoded anew.
func TestGenerateRetryAfterTheStreamBeganSendsTheSameRequest(t *testing.T) {
	h := newHarness(t, nil)
	released := 0
	h.p.bodyReleased = func() { released++ }
	h.f.Enqueue(agenttest.Answer{Text: "lost", Drop: true, DropAfter: 1}, agenttest.TextAnswer("recovered"))
	req := userReq("hi")
	req.Messages = append(req.Messages, echogate.Message{Role: echogate.RoleAssistant, Content: "earlier"},
		echogate.Message{Role: echogate.RoleUser, Content: "and now"})
	req.CacheKey = "session-1"
	resp, err := h.generate(t, context.Background(), req, nil)
	if err != nil || resp.Message.Content != "recovered" {
		t.Fatalf("Generate = %q, %v, want recovered", resp.Message.Content, err)
	}
	reqs := h.f.ChatRequests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2", len(reqs))
	}
	a, b := reqs[0], reqs[1]
	a.Seq, b.Seq, a.Header, b.Header = 0, 0, nil, nil
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the retry sent\n%+v\nwant the first attempt's\n%+v", b, a)
	}
	if released != 2 {
		t.Errorf("bodies given back = %d, want one per attempt (2)", released)
	}
}

// Once released, a body's buffer is held by nothing a request keeps (its reader, closed, and
// its GetBody): the transport keeps the request for as long as the answer streams.
func TestReleasedBodyIsNotHeldByItsRequest(t *testing.T) {
	b := getReqBody()
	buf := make([]byte, maxPooledBody+1) // too large for the pool: only references keep it
	copy(buf, "the conversation")
	b.b = buf
	collected := make(chan struct{})
	runtime.AddCleanup(&buf[0], func(ch chan struct{}) { close(ch) }, collected)
	buf = nil
	r := b.reader()
	getBody := b.source().getBody
	if got, err := io.ReadAll(r); err != nil || len(got) != maxPooledBody+1 {
		t.Fatalf("read %d bytes, %v, want the body", len(got), err)
	}
	r.Close()
	b.release()
	b = nil
	if rc, err := getBody(); !errors.Is(err, errBodyReleased) {
		t.Errorf("GetBody after release = %v, %v, want errBodyReleased", rc, err)
	}
	for range 50 {
		runtime.GC()
		select {
		case <-collected:
			runtime.KeepAlive(r)
			runtime.KeepAlive(getBody)
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("the released body's buffer is still reachable from its request's reader or GetBody")
}
