package openai

import (
	"io"
	"testing"
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
