package discord

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/discord/discordtest"
	"github.com/echogate/echogate/internal/netguard"
)

// TestAttachmentsAndDownload: a DM with files reaches the sink with their metadata, and
// Download fetches them from the fake CDN without credentials.
func TestAttachmentsAndDownload(t *testing.T) {
	h := start(t, discordtest.Options{}, nil, nil)
	h.waitReady(t)
	csv := []byte("a,b\n1,2\n")
	h.srv.SendWithFiles("", "", ann, "what is in here?", false,
		discordtest.Attachment{Filename: "data.csv", ContentType: "text/csv; charset=utf-8", Data: csv},
		discordtest.Attachment{Filename: "huge.pdf", ContentType: "application/pdf", Data: []byte("%PDF"), Size: 50 << 20})
	if err := h.srv.WaitFor(10*time.Second, "the DM event", func() bool { evs, _ := h.sink.snapshot(); return len(evs) == 1 }); err != nil {
		t.Fatal(err)
	}
	evs, _ := h.sink.snapshot()
	atts := evs[0].Attachments
	if len(atts) != 2 || atts[0].Name != "data.csv" || atts[0].MIME != "text/csv; charset=utf-8" || atts[0].Size != int64(len(csv)) || atts[1].Size != 50<<20 {
		t.Fatalf("attachments = %+v, want data.csv and huge.pdf with their sizes", atts)
	}
	ctx := context.Background()
	data, mt, err := h.ch.Download(ctx, atts[0], 1<<20)
	if err != nil || string(data) != string(csv) || mt != "text/csv" {
		t.Errorf("Download(data.csv) = %q, %q, %v; want the CSV", data, mt, err)
	}
	if _, _, err := h.ch.Download(ctx, atts[1], 20<<20); !errors.Is(err, echogate.ErrTooLarge) {
		t.Errorf("Download(huge.pdf, 50 MiB stated, limit 20 MiB) = %v, want ErrTooLarge", err)
	}
	if n := h.srv.AttachmentDownloads(atts[1].ID); n != 0 {
		t.Errorf("huge.pdf downloads = %d, want 0 (refused from the stated size)", n)
	}
	evil := atts[0]
	evil.URL = "https://cdn.evil.example/attachments/1/2/data.csv"
	if _, _, err := h.ch.Download(ctx, evil, 1<<20); !errors.Is(err, netguard.ErrRefused) {
		t.Errorf("Download(other host) = %v, want ErrRefused", err)
	}
}
