package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/extract"
	"github.com/echogate/echogate/tools"
)

// fakeHistory is a transcript per session.
type fakeHistory map[echogate.SessionKey][]echogate.StoredMessage

func (h fakeHistory) History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error) {
	return h[key], nil
}

// fakeDownloader serves files by attachment id and counts downloads.
type fakeDownloader struct {
	files map[string][]byte
	calls map[string]int
}

func (d *fakeDownloader) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	return echogate.MessageRef{}, nil
}

func (d *fakeDownloader) Download(ctx context.Context, att echogate.Attachment, maxBytes int64) ([]byte, string, error) {
	d.calls[att.ID]++
	data, ok := d.files[att.ID]
	if !ok {
		return nil, "", errors.New("404")
	}
	if int64(len(data)) > maxBytes {
		return nil, "", fmt.Errorf("download %s: %w", att.Name, echogate.ErrTooLarge)
	}
	return data, "", nil
}

type sendOnly struct{}

func (sendOnly) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	return echogate.MessageRef{}, nil
}

func pngBytes(t *testing.T) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func userWith(atts ...echogate.Attachment) echogate.StoredMessage {
	return echogate.StoredMessage{Message: echogate.Message{Role: echogate.RoleUser, Content: "x", Attachments: atts}}
}

func TestFilesListAndRead(t *testing.T) {
	a := echogate.Attachment{ID: "F1", Name: "notes.md", MIME: "text/plain", Size: 7}
	b := echogate.Attachment{ID: "F2", Name: "data.csv", MIME: "text/csv", Size: 8}
	c := echogate.Attachment{ID: "F3", Name: "copy.md", MIME: "text/plain", Size: 7}
	hist := fakeHistory{"slack:C1": {
		userWith(a),
		{Message: echogate.Message{Role: echogate.RoleAssistant, Content: "ok", Attachments: []echogate.Attachment{{ID: "FX"}}}},
		userWith(b, c),
		userWith(a), // the same file again
	}}
	dl := &fakeDownloader{files: map[string][]byte{"F1": []byte("# Notes"), "F2": []byte("a,b\n1,2\n"), "F3": []byte("# Notes")}, calls: map[string]int{}}
	f, err := NewFiles(FilesConfig{}, hist, map[string]Replier{"slack": dl, "web": sendOnly{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	caller := tools.Caller{UserID: "slack:U1", Session: "slack:C1", Channel: "slack:C1"}
	files, err := f.Files(ctx, caller)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range files {
		names = append(names, x.ID)
	}
	if got := strings.Join(names, ","); got != "F1,F3,F2" {
		t.Errorf("Files = %s, want F1,F3,F2 (most recent first, each once, user messages only)", got)
	}
	if other, _ := f.Files(ctx, tools.Caller{UserID: "slack:U1", Session: "slack:C2", Channel: "slack:C2"}); len(other) != 0 {
		t.Errorf("Files(other session) = %v, want none", other)
	}

	doc, err := f.Read(ctx, caller, a, 1<<20, extract.Options{})
	if err != nil || doc.MIME != extract.TypeMarkdown || doc.Text != "# Notes" {
		t.Fatalf("Read(notes.md) = %+v, %v; want the Markdown text", doc, err)
	}
	// Again: from the cache by id, no download.
	if _, err := f.Read(ctx, caller, a, 1<<20, extract.Options{}); err != nil || dl.calls["F1"] != 1 {
		t.Errorf("second Read: err %v, downloads %d, want 1 (cached)", err, dl.calls["F1"])
	}
	// The same content under another id: downloaded, but not extracted again (same hash).
	if _, err := f.Read(ctx, caller, c, 1<<20, extract.Options{}); err != nil || dl.calls["F3"] != 1 {
		t.Errorf("Read(copy): err %v, downloads %d, want 1", err, dl.calls["F3"])
	}
	if n, _ := f.cacheStats(); n != 1 {
		t.Errorf("cache entries = %d, want 1 (one content hash)", n)
	}
	doc, err = f.Read(ctx, caller, b, 1<<20, extract.Options{})
	if err != nil || !strings.Contains(doc.Text, "| 1 | 2 |") {
		t.Errorf("Read(data.csv) = %q, %v; want a table", doc.Text, err)
	}
	if _, err := f.Read(ctx, caller, b, 3, extract.Options{FirstPage: 2}); !errors.Is(err, echogate.ErrTooLarge) {
		t.Errorf("Read(max 3 bytes) = %v, want ErrTooLarge", err)
	}
	web := tools.Caller{UserID: "web:u", Session: "web:s", Channel: "web:s"}
	if _, err := f.Read(ctx, web, a, 1<<20, extract.Options{}); err == nil || !strings.Contains(err.Error(), "does not serve file downloads") {
		t.Errorf("Read(web) = %v, want an error saying web serves no downloads", err)
	}
}

func TestFilesCacheBounds(t *testing.T) {
	dl := &fakeDownloader{files: map[string][]byte{}, calls: map[string]int{}}
	f, _ := NewFiles(FilesConfig{CacheEntries: 3, CacheBytes: 1 << 20}, fakeHistory{}, map[string]Replier{"slack": dl})
	caller := tools.Caller{UserID: "slack:U1", Session: "slack:C1", Channel: "slack:C1"}
	for i := range 10 {
		id := fmt.Sprintf("F%d", i)
		dl.files[id] = []byte(fmt.Sprintf("text number %d", i))
		if _, err := f.Read(context.Background(), caller, echogate.Attachment{ID: id, Name: id + ".txt"}, 1<<20, extract.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := f.cacheStats(); n != 3 {
		t.Errorf("cache entries = %d, want 3 (CacheEntries)", n)
	}
	if len(f.ids) > 3 {
		t.Errorf("id index holds %d entries, want at most 3 (evicted with the cache)", len(f.ids))
	}
	f2, _ := NewFiles(FilesConfig{CacheBytes: 600}, fakeHistory{}, map[string]Replier{"slack": dl})
	for i := range 10 {
		id := fmt.Sprintf("F%d", i)
		_, _ = f2.Read(context.Background(), caller, echogate.Attachment{ID: id, Name: id + ".txt"}, 1<<20, extract.Options{})
	}
	if _, b := f2.cacheStats(); b > 600 {
		t.Errorf("cache bytes = %d, want at most 600 (CacheBytes)", b)
	}
}

func TestPrepareAttachments(t *testing.T) {
	img := pngBytes(t)
	dl := &fakeDownloader{files: map[string][]byte{"I1": img, "I2": []byte("not an image at all")}, calls: map[string]int{}}
	f, _ := NewFiles(FilesConfig{MaxBytes: 1000, ImageMaxBytes: 500}, fakeHistory{}, map[string]Replier{"slack": dl, "web": sendOnly{}})
	ctx := context.Background()
	pic := echogate.Attachment{ID: "I1", Name: "pic.png", MIME: "image/png", Size: int64(len(img))}
	fake := echogate.Attachment{ID: "I2", Name: "fake.png", MIME: "image/png", Size: 19}
	huge := echogate.Attachment{ID: "I3", Name: "huge.jpg", MIME: "image/jpeg", Size: 9000}
	big := echogate.Attachment{ID: "D1", Name: "big.pdf", MIME: "application/pdf", Size: 5000}
	small := echogate.Attachment{ID: "D2", Name: "ok.pdf", MIME: "application/pdf", Size: 10}
	for name, tt := range map[string]struct {
		platform, model string
		atts            []echogate.Attachment
		images          int
		want            []string
	}{
		"vision":             {"slack", "gpt-4o-mini", []echogate.Attachment{pic}, 1, nil},
		"no vision":          {"slack", "gpt-3.5-turbo", []echogate.Attachment{pic}, 0, []string{"[image attached: pic.png — the current model (gpt-3.5-turbo) cannot see images]"}},
		"image over limit":   {"slack", "gpt-4o", []echogate.Attachment{huge}, 0, []string{"huge.jpg", "8.8 KiB is over the 500 bytes image limit (files.image_max_bytes)"}},
		"not really image":   {"slack", "gpt-4o", []echogate.Attachment{fake}, 0, []string{"fake.png", "not a PNG, JPEG, GIF or WebP"}},
		"file over limit":    {"slack", "gpt-4o", []echogate.Attachment{big, small}, 0, []string{"[file big.pdf is 4.9 KiB; the limit is 1000 bytes (files.max_bytes): it cannot be read]"}},
		"platform no files":  {"web", "gpt-4o", []echogate.Attachment{pic}, 0, []string{"could not be shown to you", "does not serve file downloads"}},
		"nothing to prepare": {"slack", "gpt-4o", []echogate.Attachment{small}, 0, nil},
	} {
		in := echogate.Message{Role: echogate.RoleUser, Content: "look", Attachments: tt.atts}
		out := f.prepareAttachments(ctx, tt.platform, tt.model, in)
		if len(out.Images) != tt.images {
			t.Errorf("%s: images = %d, want %d (%q)", name, len(out.Images), tt.images, out.Content)
		}
		if tt.images > 0 && (!strings.HasPrefix(out.Images[0].URL, "data:image/png;base64,") || out.Images[0].MIME != "image/png") {
			t.Errorf("%s: image = %.40s / %s, want a PNG data URL", name, out.Images[0].URL, out.Images[0].MIME)
		}
		for _, w := range tt.want {
			if !strings.Contains(out.Content, w) {
				t.Errorf("%s: content = %q, want it to contain %q", name, out.Content, w)
			}
		}
		if len(tt.want) == 0 && out.Content != "look" {
			t.Errorf("%s: content = %q, want it unchanged", name, out.Content)
		}
		if len(in.Images) != 0 {
			t.Errorf("%s: the input message was modified", name)
		}
	}
	if dl.calls["I3"] != 0 {
		t.Errorf("huge.jpg downloads = %d, want 0 (refused from its stated size)", dl.calls["I3"])
	}
}

func TestDefaultVision(t *testing.T) {
	for model, want := range map[string]bool{
		"gpt-4o-mini": true, "gpt-4o": true, "gpt-4.1-nano": true, "gpt-5": true, "openai/gpt-4o": true,
		"claude-3-5-sonnet-latest": true, "anthropic/claude-sonnet-4": true, "gemini-2.0-flash": true,
		"llava:13b": true, "llama3.2-vision": true, "qwen2.5-vl-7b": true, "o1": true, "o4-mini": true,
		"gpt-3.5-turbo": false, "o1-mini": false, "o3-mini": false, "llama3.1:8b": false, "mistral-small": false,
		"deepseek-chat": false, "text-embedding-3-small": false,
	} {
		if got := DefaultVision(model); got != want {
			t.Errorf("DefaultVision(%q) = %v, want %v", model, got, want)
		}
	}
}
