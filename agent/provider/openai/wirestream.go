package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	goopenai "github.com/sashabaranov/go-openai"
)

// The streaming chat call, on the provider's HTTP client. Errors are go-openai's types
// (*goopenai.APIError, *goopenai.RequestError), made as go-openai makes them, so classify reads
// them as it always has; what differs is the cost: the SSE lines are split without regular
// expressions and without a copy per line.

// maxStreamLine bounds one SSE line (a chunk); OpenAI's are far below it.
const maxStreamLine = 4 << 20

// maxErrorLines bounds the non-data lines a stream may send between two data lines before it is
// given up on, as go-openai's EmptyMessagesLimit does (the blank line ending every event is one).
const maxErrorLines = 300

var errTooManyEmpty = errors.New("stream has sent too many empty messages")

// chatStream is one streaming response.
type chatStream struct {
	body io.ReadCloser
	r    *bufio.Reader
	errs bytes.Buffer // non-data lines: an error object split over lines, or noise
	done bool
	// cur is the chunk Recv returns, reused (its choices array too); prev the one before it,
	// whose strings the next chunk reuses when it repeats them.
	cur, prev goopenai.ChatCompletionStreamResponse
}

// openStream sends a streaming chat request with body to the endpoint.
func (p *Provider) openStream(ctx context.Context, body *reqBody) (*chatStream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/chat/completions", body.reader())
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body.b))
	req.GetBody = body.source().getBody
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	if p.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	if p.cfg.Organization != "" {
		h.Set("OpenAI-Organization", p.cfg.Organization)
	}
	resp, err := p.doer.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		defer resp.Body.Close()
		return nil, errorResponse(resp)
	}
	r := readers.Get().(*bufio.Reader)
	r.Reset(resp.Body)
	return &chatStream{body: resp.Body, r: r}, nil
}

// readers are the streams' line buffers, reused: one per model call was a twentieth of all the
// bytes the gateway allocated. A stream holds its buffer for as long as the model answers, one
// per turn in flight, while a chunk's line is a few hundred bytes: 2 KiB holds any usual line
// (a longer one is collected, see readLine) and is 6 KiB less per turn in flight than 8 KiB.
const streamLineBuffer = 2 << 10

var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, streamLineBuffer) }}

// errorResponse reads a failed response as go-openai does: an OpenAI error object becomes an
// *APIError, anything else a *RequestError with the body.
func errorResponse(resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("error, reading response body: %w", err)
	}
	var er goopenai.ErrorResponse
	err = json.Unmarshal(body, &er)
	if err != nil || er.Error == nil {
		re := &goopenai.RequestError{HTTPStatus: resp.Status, HTTPStatusCode: resp.StatusCode, Err: err, Body: body}
		if er.Error != nil {
			re.Err = er.Error
		}
		return re
	}
	er.Error.HTTPStatus = resp.Status
	er.Error.HTTPStatusCode = resp.StatusCode
	return er.Error
}

// Recv returns the next chunk, valid until the next Recv (the stream reuses it); io.EOF after
// [DONE] (or when the stream simply ends). Strings in it stay valid.
func (s *chatStream) Recv() (*goopenai.ChatCompletionStreamResponse, error) {
	data, err := s.next()
	if err != nil {
		return nil, err
	}
	s.prev = s.cur
	s.cur = goopenai.ChatCompletionStreamResponse{Choices: s.cur.Choices[:0]}
	if err := decodeChunk(data, &s.cur, &s.prev); err != nil {
		return nil, err
	}
	return &s.cur, nil
}

// next returns the payload of the next data line.
func (s *chatStream) next() ([]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	for lines := 0; ; {
		line, err := s.readLine()
		if err != nil {
			return nil, s.streamError(err)
		}
		line = bytes.TrimSpace(line)
		data, isData := bytes.CutPrefix(line, []byte("data:"))
		data = bytes.TrimLeft(data, " \t")
		if isData && bytes.HasPrefix(data, []byte(`{"error":`)) {
			// An error event: the object, and whatever follows, is the error.
			s.errs.Write(data)
			for {
				more, err := s.readLine()
				if err != nil {
					break
				}
				s.errs.Write(bytes.TrimSpace(more))
			}
			return nil, s.streamError(io.EOF)
		}
		if !isData {
			if len(line) > 0 && line[0] != ':' && !bytes.HasPrefix(line, []byte("event:")) && !bytes.HasPrefix(line, []byte("id:")) && !bytes.HasPrefix(line, []byte("retry:")) {
				s.errs.Write(line)
			}
			if lines++; lines > maxErrorLines {
				return nil, errTooManyEmpty
			}
			continue
		}
		if string(data) == "[DONE]" {
			s.done = true
			return nil, io.EOF
		}
		return data, nil
	}
}

// readLine reads one line; the slice is valid until the next read.
func (s *chatStream) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == nil || (err == io.EOF && len(line) > 0) {
		return line, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	// A line longer than the buffer: collect it.
	buf := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(buf) > maxStreamLine {
			return nil, fmt.Errorf("a stream line is longer than %d bytes", maxStreamLine)
		}
		line, err = s.r.ReadSlice('\n')
		buf = append(buf, line...)
	}
	if err != nil && !(err == io.EOF && len(buf) > 0) {
		return nil, err
	}
	return buf, nil
}

// streamError is the error that ends the stream: an error object the endpoint sent, else err.
func (s *chatStream) streamError(err error) error {
	if s.errs.Len() > 0 {
		var er goopenai.ErrorResponse
		if json.Unmarshal(s.errs.Bytes(), &er) == nil && er.Error != nil {
			return fmt.Errorf("error, %w", er.Error)
		}
	}
	return err
}

// Close releases the connection. After [DONE] it reads the little that is left (the chunked
// encoding's end), so the connection goes back to the pool instead of being closed.
func (s *chatStream) Close() error {
	if s.r == nil {
		return nil
	}
	if s.done {
		_, _ = io.CopyN(io.Discard, s.r, 4<<10)
	}
	err := s.body.Close()
	s.r.Reset(nil)
	readers.Put(s.r)
	s.r = nil
	return err
}
