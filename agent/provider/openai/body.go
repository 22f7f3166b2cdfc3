package openai

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// reqBody is one Generate's encoded chat request, read by the request of each attempt. Its
// buffer goes back to reqBodies when Generate is done with it, unless the transport still holds
// an attempt's body open (it may close a body after the response arrived, and even after
// RoundTrip returned): then it is left to the garbage collector, never reused while read.
//
// Nothing the transport keeps refers to the buffer once it is released: a request holds its
// body through a bodySource, emptied by release, and a reader lets go of it when closed. The
// transport keeps a request until its response has been read, which for a stream is as long as
// the model answers, and Generate releases the body as soon as the answer begins.
type reqBody struct {
	b    []byte
	open atomic.Int32 // readers not closed yet
	src  *bodySource  // what the requests made from b rewind from (GetBody); nil until one is
}

// bodySource is a request's GetBody: readers of the body until it is released, then an error
// (the transport rewinds a body only before the response arrived, while the caller still holds
// the body, so it never sees one).
type bodySource struct {
	mu   sync.Mutex
	body *reqBody
}

var errBodyReleased = errors.New("openai: the request body was already released")

func (s *bodySource) getBody() (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.body == nil {
		return nil, errBodyReleased
	}
	return s.body.reader(), nil
}

// source returns the bodySource of b. Only a caller holding b may call it.
func (b *reqBody) source() *bodySource {
	if b.src == nil {
		b.src = &bodySource{body: b}
	}
	return b.src
}

// reqBodies holds the buffers of finished calls: one per model call was the largest allocation
// of a turn (its conversation, encoded).
var reqBodies = sync.Pool{New: func() any { return new(reqBody) }}

// maxPooledBody bounds the buffers kept: a call with a huge conversation does not pin its
// buffer in the pool.
const maxPooledBody = 256 << 10

func getReqBody() *reqBody { return reqBodies.Get().(*reqBody) }

// release gives b back; the caller must not use it afterwards. Readers of it the transport has
// not closed yet keep it out of the pool.
func (b *reqBody) release() {
	if src := b.src; src != nil {
		src.mu.Lock()
		src.body = nil
		src.mu.Unlock()
		b.src = nil
	}
	if b.open.Load() != 0 || cap(b.b) > maxPooledBody {
		return
	}
	b.b = b.b[:0]
	reqBodies.Put(b)
}

// reader returns a request body reading b from its start. Only a caller holding b (Generate,
// or the transport inside a RoundTrip it made) may call it.
func (b *reqBody) reader() *bodyReader {
	b.open.Add(1)
	return &bodyReader{body: b, rest: b.b}
}

// bodyReader is one request's body. Read and Close are safe to call concurrently: once Close
// returned, it reads nothing of the buffer any more.
type bodyReader struct {
	mu     sync.Mutex
	body   *reqBody
	rest   []byte
	closed bool
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, io.ErrClosedPipe
	}
	if len(r.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed, r.rest = true, nil
		r.body.open.Add(-1)
		r.body = nil // the transport may keep the reader as long as the response streams
	}
	return nil
}

// copyConn is a connection of the default transport. The transport hands a request body to
// the connection's ReadFrom once its own write buffer is full (any chat request longer than
// connWriteBuffer); net's ReadFrom for TCP allocated a copy buffer of the body's size for each.
// copyConn copies through a pooled buffer of io.Copy's size instead, so the writes to the
// socket are the same.
type copyConn struct{ net.Conn }

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (c copyConn) ReadFrom(r io.Reader) (int64, error) {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	return io.CopyBuffer(writerOnly{c.Conn}, r, *buf)
}

// writerOnly hides the connection's own ReadFrom from io.CopyBuffer.
type writerOnly struct{ io.Writer }
