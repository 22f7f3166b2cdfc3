package openai

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// BenchmarkStreamsInFlight reports the live heap each model call holds while its answer
// streams: streams calls with a conversation of about 48 KB, all waiting for the model's next
// chunk (buffers a pool keeps for reuse are not counted: see heapNow). The endpoint is a minimal one in this process, so its side of each connection
// (net/http's buffers, ~10 KB) is part of the figure.
func BenchmarkStreamsInFlight(b *testing.B) {
	const streams = 200
	var hold atomic.Pointer[chan struct{}] // this iteration's: closed to end its answers
	var arrived sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-*hold.Load()
		fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	p, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: testKey, MaxRetries: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var msgs []echogate.Message
	for i := range 24 {
		role := echogate.RoleUser
		if i%2 == 1 {
			role = echogate.RoleAssistant
		}
		msgs = append(msgs, echogate.Message{Role: role, Content: strings.Repeat(fmt.Sprintf("turn %d of a long conversation. ", i), 64)})
	}
	var perStream float64
	for b.Loop() {
		release := make(chan struct{})
		hold.Store(&release)
		var before runtime.MemStats
		heapNow(&before)
		arrived.Add(streams)
		var done sync.WaitGroup
		for range streams {
			done.Add(1)
			go func() {
				defer done.Done()
				first := true
				_, err := p.Generate(context.Background(), agent.Request{Model: "m", Messages: msgs}, func(agent.Delta) error {
					if first {
						first = false
						arrived.Done()
					}
					return nil
				})
				if err != nil {
					b.Error(err)
				}
			}()
		}
		arrived.Wait()
		var during runtime.MemStats
		heapNow(&during)
		perStream += (float64(during.HeapAlloc) - float64(before.HeapAlloc)) / streams
		close(release)
		done.Wait()
	}
	b.ReportMetric(perStream/float64(b.N), "heap-B/stream")
}

// heapNow reads the live heap into m, after two collections: the second empties the pools the
// first left in their victim caches, so buffers waiting in a pool for reuse are not counted.
func heapNow(m *runtime.MemStats) {
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(m)
}
