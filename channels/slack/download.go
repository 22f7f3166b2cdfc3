package slack

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/internal/extract"
	"github.com/echogate/echogate/internal/netguard"
)

var _ channels.Downloader = (*Channel)(nil)

// slackFileHosts is the host family Slack serves files from (url_private_download is on
// files.slack.com; GovSlack uses slack-gov.com). Redirects must stay inside it.
var slackFileHosts = []string{"slack.com", "slack-edge.com", "slack-files.com", "slack-gov.com"}

// downloader is the Channel's file downloader; the configured API host may serve files too.
func (c *Channel) downloader() (*netguard.Downloader, error) {
	return c.files.Get(slackFileHosts, c.cfg.APIURL)
}

// Download fetches a Slack file (url_private_download) with the bot token. It reads at most
// maxBytes: a file whose stated size is larger is refused before downloading, and a body that
// grows past the limit is cut off; both are errors wrapping echogate.ErrTooLarge. Only Slack's
// own hosts (and the configured API host) are contacted, over https, never a private address;
// redirects are held to the same rules. Content types outside the attachment allow-list (text,
// PDF, JSON, common images) are refused. It blocks until the file is read, the download timeout
// (60s) passes or ctx ends.
//
// The bot token needs the files:read scope: without it Slack answers with its HTML sign-in page
// instead of the file, which is reported as such.
func (c *Channel) Download(ctx context.Context, att echogate.Attachment, maxBytes int64) ([]byte, string, error) {
	if att.URL == "" {
		return nil, "", fmt.Errorf("slack: download file %s (%s): the event carried no download URL", att.ID, att.Name)
	}
	d, err := c.downloader()
	if err != nil {
		return nil, "", fmt.Errorf("slack: download file %s: %w", att.ID, err)
	}
	data, mt, err := d.Get(ctx, netguard.Request{
		URL: att.URL, Name: att.Name, Size: att.Size, MaxBytes: maxBytes,
		Header: http.Header{"Authorization": {"Bearer " + c.cfg.BotToken}},
	})
	if err != nil {
		return nil, "", fmt.Errorf("slack: download file %s: %w", att.ID, err)
	}
	if mt == extract.TypeHTML && !expectsHTML(att) {
		return nil, "", fmt.Errorf("slack: download file %s (%s): Slack answered with an HTML page instead of the file: "+
			"give the bot token the files:read scope (OAuth & Permissions) and reinstall the app", att.ID, att.Name)
	}
	return data, mt, nil
}

func expectsHTML(att echogate.Attachment) bool {
	if strings.Contains(strings.ToLower(att.MIME), "html") {
		return true
	}
	return extract.TypeByExt(att.Name) == extract.TypeHTML
}
