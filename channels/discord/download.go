package discord

import (
	"context"
	"fmt"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/internal/netguard"
)

var _ channels.Downloader = (*Channel)(nil)

// discordFileHosts is the host family Discord serves attachments from (cdn.discordapp.com,
// media.discordapp.net). Redirects must stay inside it.
var discordFileHosts = []string{"discordapp.com", "discordapp.net", "discord.com"}

// downloader is the Channel's file downloader; the configured REST host may serve files too.
func (c *Channel) downloader() (*netguard.Downloader, error) {
	return c.files.Get(discordFileHosts, c.cfg.APIURL)
}

// Download fetches a Discord attachment from the CDN (no credentials: attachment URLs are
// signed). It reads at most maxBytes: an attachment whose stated size is larger is refused
// before downloading, and a body that grows past the limit is cut off; both are errors wrapping
// echogate.ErrTooLarge. Only Discord's CDN hosts (and the configured API host) are contacted,
// over https, never a private address; redirects are held to the same rules. Content types
// outside the attachment allow-list (text, PDF, JSON, common images) are refused. It blocks
// until the file is read, the download timeout (60s) passes or ctx ends.
//
// Discord's signed attachment URLs expire after about a day; a download of an older attachment
// fails with HTTP 404 and the user must send the file again.
func (c *Channel) Download(ctx context.Context, att echogate.Attachment, maxBytes int64) ([]byte, string, error) {
	if att.URL == "" {
		return nil, "", fmt.Errorf("discord: download attachment %s (%s): the message carried no URL", att.ID, att.Name)
	}
	d, err := c.downloader()
	if err != nil {
		return nil, "", fmt.Errorf("discord: download attachment %s: %w", att.ID, err)
	}
	data, mt, err := d.Get(ctx, netguard.Request{URL: att.URL, Name: att.Name, Size: att.Size, MaxBytes: maxBytes})
	if err != nil {
		return nil, "", fmt.Errorf("discord: download attachment %s: %w", att.ID, err)
	}
	return data, mt, nil
}
