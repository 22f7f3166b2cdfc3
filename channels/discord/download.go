package discord

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/internal/netguard"
)

var _ channels.Downloader = (*Channel)(nil)

// discordFileHosts is the host family Discord serves attachments from (cdn.discordapp.com,
// media.discordapp.net). Redirects must stay inside it.
var discordFileHosts = []string{"discordapp.com", "discordapp.net", "discord.com"}

// downloads is the Channel's file downloader, built on first use from the config.
type downloads struct {
	once sync.Once
	d    *netguard.Downloader
	err  error
}

func (c *Channel) downloader() (*netguard.Downloader, error) {
	dl := &c.files
	dl.once.Do(func() {
		cfg := netguard.DownloadConfig{Hosts: discordFileHosts}
		// The configured REST host (a proxy, a test fake) may serve files too.
		if u, err := url.Parse(c.cfg.APIURL); err == nil && u.Hostname() != "" {
			cfg.TrustedHosts = []string{u.Hostname()}
		}
		dl.d, dl.err = netguard.NewDownloader(cfg)
	})
	return dl.d, dl.err
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
