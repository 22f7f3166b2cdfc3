package slack

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
	"github.com/echogate/echogate/internal/netguard"
)

// TestFileShareBecomesAttachments: a mention with an uploaded file reaches the sink with the
// file's metadata, and Download fetches it from the fake with the bot token.
func TestFileShareBecomesAttachments(t *testing.T) {
	e := newEnv(t, true, nil)
	pdf := []byte("%PDF-1.4 pretend")
	file := e.srv.AddFile(slacktest.File{Name: "report.pdf", MIME: "application/pdf", Data: pdf})
	e.push(slacktest.WithFiles(slacktest.Mention("C1", "U1", "1700000000.000100", "", "<@"+e.srv.BotUserID()+"> summarize this"), file), slacktest.Delivery{})
	e.rec.waitEvents(1)
	evs, _ := e.rec.snapshot()
	if len(evs[0].Attachments) != 1 {
		t.Fatalf("event attachments = %+v, want the PDF", evs[0].Attachments)
	}
	att := evs[0].Attachments[0]
	if att.ID != file["id"] || att.Name != "report.pdf" || att.MIME != "application/pdf" || att.Size != int64(len(pdf)) || !strings.Contains(att.URL, "/download/report.pdf") {
		t.Errorf("attachment = %+v, want id %v, report.pdf, application/pdf, %d bytes, the download URL", att, file["id"], len(pdf))
	}
	ctx := context.Background()
	data, mt, err := e.ch.Download(ctx, att, 1<<20)
	if err != nil || string(data) != string(pdf) || mt != "application/pdf" {
		t.Errorf("Download = %q, %q, %v; want the PDF", data, mt, err)
	}
	if n := e.srv.FileDownloads(att.ID); n != 1 {
		t.Errorf("authorized downloads = %d, want 1 (the bot token is sent)", n)
	}

	// Over the limit: refused from the stated size, nothing downloaded.
	if _, _, err := e.ch.Download(ctx, att, 4); !errors.Is(err, echogate.ErrTooLarge) {
		t.Errorf("Download(max 4 bytes) = %v, want ErrTooLarge", err)
	}
	if n := e.srv.FileDownloads(att.ID); n != 1 {
		t.Errorf("downloads after an oversized request = %d, want still 1", n)
	}
	// A file whose stated size lies is cut off while reading.
	lying := att
	lying.Size = 3
	if _, _, err := e.ch.Download(ctx, lying, 8); !errors.Is(err, echogate.ErrTooLarge) {
		t.Errorf("Download(stated 3, real %d, max 8) = %v, want ErrTooLarge", len(pdf), err)
	}
	// Another host is never contacted with the token.
	evil := att
	evil.URL = "https://evil.example/files-pri/x/download/report.pdf"
	if _, _, err := e.ch.Download(ctx, evil, 1<<20); !errors.Is(err, netguard.ErrRefused) {
		t.Errorf("Download(other host) = %v, want ErrRefused", err)
	}
}

// TestDownloadWithoutFilesScope: Slack answers a token without files:read with its sign-in
// page; Download says so instead of handing HTML to the extractor.
func TestDownloadWithoutFilesScope(t *testing.T) {
	srv := slacktest.New(slacktest.Options{})
	t.Cleanup(srv.Close)
	ch, err := New(Config{BotToken: "xoxb-other-token", SigningSecret: "s", APIURL: srv.APIURL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := srv.AddFile(slacktest.File{Name: "notes.md", MIME: "text/markdown", Data: []byte("# Notes")})
	att := echogate.Attachment{ID: f["id"].(string), Name: "notes.md", MIME: "text/markdown", Size: 7, URL: f["url_private_download"].(string)}
	_, _, err = ch.Download(context.Background(), att, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "files:read") {
		t.Errorf("Download(token without access) = %v, want an error naming the files:read scope", err)
	}
}
