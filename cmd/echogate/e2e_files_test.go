package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/discord/discordtest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// The document the PDF attachment holds; the answer must quote it.
const pdfSentence = "Revenue grew by 42 percent in the third quarter."

// fileModel is an OpenAI-wire fake for attachment turns: "summarize this" calls read_file on
// the message's first attachment, a read_file result is answered by quoting the file content
// (or the tool's error), and anything else is answered with the number of images the last user
// message carried.
func fileModel(t *testing.T) *agenttest.FakeOpenAI {
	t.Helper()
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-e2e"})
	t.Cleanup(fake.Close)
	firstFile := regexp.MustCompile(`\[attachments: (.+?) \(`)
	content := regexp.MustCompile(`(?s)\(untrusted\)>>>\n(.*?)\n<<<end of file content>>>`)
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		last := req.Last()
		if last.Role == "tool" {
			if m := content.FindStringSubmatch(last.Content); m != nil {
				return agenttest.TextAnswer("The document says: " + oneLine(m[1], 300)), true
			}
			return agenttest.TextAnswer("I could not read it: " + oneLine(last.Content, 300)), true
		}
		user := req.LastUser()
		if strings.Contains(user, "summarize this") {
			if m := firstFile.FindStringSubmatch(user); m != nil {
				return agenttest.ToolAnswer(echogate.ToolCall{Name: "read_file", Arguments: fmt.Sprintf(`{"file":%q}`, m[1])}), true
			}
		}
		images := 0
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				for _, p := range req.Messages[i].Parts {
					if p.Type == "image_url" {
						images++
					}
				}
				break
			}
		}
		return agenttest.TextAnswer(fmt.Sprintf("I got %d image(s).", images)), true
	})
	return fake
}

func testPDF(t *testing.T, text string) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.AddPage()
	p.SetFont("Helvetica", "", 12)
	p.Cell(40, 10, text)
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for x := range 4 {
		for y := range 4 {
			img.Set(x, y, color.RGBA{R: uint8(60 * x), G: 200, B: uint8(60 * y), A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// attachedFile is one file a test user sends.
type attachedFile struct {
	name, mime string
	data       []byte
	size       int64 // stated size; 0 means len(data)
}

// fileScenarios runs the attachment scenarios through one platform: send posts a message with
// files addressed to the bot in a fresh conversation.
func fileScenarios(t *testing.T, p *platform, model *agenttest.FakeOpenAI, send func(t *testing.T, c *conv, text string, f attachedFile)) {
	t.Run("pdf summarized through read_file", func(t *testing.T) {
		c := p.newConv(t, "[pdf]")
		send(t, c, "summarize this [pdf]", attachedFile{name: "report.pdf", mime: "application/pdf", data: testPDF(t, pdfSentence)})
		c.waitMsg(t, "The document says:", pdfSentence)
		found := false
		for _, req := range model.ChatRequests() {
			for _, m := range req.Messages {
				if m.Role == "tool" && strings.Contains(m.Content, pdfSentence) && strings.Contains(m.Content, "report.pdf (application/pdf") {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("no read_file result with the document's text reached the model")
		}
	})
	t.Run("image reaches a vision model as an image part", func(t *testing.T) {
		c := p.newConv(t, "[img]")
		send(t, c, "what is in this picture [img]", attachedFile{name: "chart.png", mime: "image/png", data: testPNG(t)})
		c.waitMsg(t, "I got 1 image(s).")
		var part *agenttest.ImageURL
		for _, req := range model.ChatRequests() {
			for _, m := range req.Messages {
				if m.Role == "user" && strings.Contains(m.Content, "[img]") {
					for _, pt := range m.Parts {
						if pt.Type == "image_url" {
							part = pt.ImageURL
						}
					}
				}
			}
		}
		if part == nil || !strings.HasPrefix(part.URL, "data:image/png;base64,") {
			t.Errorf("image part = %+v, want a data:image/png URL in the model request", part)
		}
	})
	t.Run("oversized file gets a clear message", func(t *testing.T) {
		c := p.newConv(t, "[big]")
		send(t, c, "summarize this [big]", attachedFile{name: "huge.pdf", mime: "application/pdf", data: []byte("%PDF-1.4"), size: 48 << 20})
		msg := c.waitMsg(t, "huge.pdf is 48 MiB; the limit is 20 MiB (files.max_bytes)")
		t.Logf("answer: %s", msg.Text)
	})
}

// TestE2EFilesSlack: Slack files on a mention, through Socket Mode, the real adapter, the
// pipeline and read_file, downloaded from the fake with the bot token.
func TestE2EFilesSlack(t *testing.T) {
	model := fileModel(t)
	p, srv := newSlackPlatform(t)
	vars := map[string]string{"OPENAI_BASE_URL": model.URL(), "OPENAI_API_KEY": "sk-e2e"}
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, "")
	waitReadyz(t, g.base, 200, "slack", func(s string) bool { return strings.Contains(s, "connected") })
	ts := 0
	fileScenarios(t, p, model, func(t *testing.T, c *conv, text string, f attachedFile) {
		t.Helper()
		file := srv.AddFile(slacktest.File{Name: f.name, MIME: f.mime, Data: f.data, Size: f.size})
		ts++
		c.thread = fmt.Sprintf("%d.%06d", 1700000000+convSeq.Add(1), ts)
		if _, err := srv.Push(slacktest.WithFiles(slacktest.Mention(c.ch, p.requester, c.thread, "", "<@"+srv.BotUserID()+"> "+text), file), slacktest.Delivery{}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestE2EFilesDiscord: Discord attachments on a guild mention, through the gateway websocket,
// the real adapter, the pipeline and read_file, downloaded from the fake CDN.
func TestE2EFilesDiscord(t *testing.T) {
	model := fileModel(t)
	p, srv := newDiscordPlatform(t)
	vars := map[string]string{"OPENAI_BASE_URL": model.URL(), "OPENAI_API_KEY": "sk-e2e"}
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, "")
	waitReadyz(t, g.base, 200, "discord", func(s string) bool { return strings.Contains(s, "connected") })
	user := discordtest.User{ID: p.requester, Username: "ann"}
	fileScenarios(t, p, model, func(t *testing.T, c *conv, text string, f attachedFile) {
		t.Helper()
		srv.SendWithFiles("400000000000000001", c.ch, user, text, true,
			discordtest.Attachment{Filename: f.name, ContentType: f.mime, Data: f.data, Size: f.size})
	})
}

// TestE2EImageWithoutVision: with a model that is not vision-capable (models.vision lists
// none), the model is told an image was attached instead of getting it.
func TestE2EImageWithoutVision(t *testing.T) {
	model := fileModel(t)
	p, srv := newDiscordPlatform(t)
	vars := map[string]string{"OPENAI_BASE_URL": model.URL(), "OPENAI_API_KEY": "sk-e2e"}
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, "models:\n  vision: []\n")
	waitReadyz(t, g.base, 200, "discord", func(s string) bool { return strings.Contains(s, "connected") })
	c := p.newConv(t, "[novision]")
	srv.SendWithFiles("400000000000000001", c.ch, discordtest.User{ID: p.requester, Username: "ann"}, "what is this [novision]", true,
		discordtest.Attachment{Filename: "cat.png", ContentType: "image/png", Data: testPNG(t)})
	c.waitMsg(t, "I got 0 image(s).")
	deadline := time.Now().Add(waitTimeout)
	for {
		told := false
		for _, req := range model.ChatRequests() {
			if strings.Contains(req.LastUser(), "[image attached: cat.png — the current model (gpt-4o-mini) cannot see images]") {
				told = true
			}
		}
		if told {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no model request told the model about the image it cannot see")
		}
		time.Sleep(10 * time.Millisecond) // the request is recorded before the answer is posted; this never loops in practice
	}
}
