package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/echogate/echogate/channels"
)

// Discord application flags that allow the MESSAGE_CONTENT intent.
const (
	flagGatewayMessageContent        = 1 << 18
	flagGatewayMessageContentLimited = 1 << 19
)

// NewChecker returns the connection check of cfg's token (echogate doctor): users/@me, and
// whether the application has the MESSAGE CONTENT intent when cfg.MessageContent asks for it.
// It uses cfg.Token, APIURL and MessageContent; client sends the calls (nil:
// http.DefaultClient). It does no I/O until Check.
func NewChecker(cfg Config, client *http.Client) channels.Checker {
	if client == nil {
		client = http.DefaultClient
	}
	return checker{cfg: cfg, client: client}
}

type checker struct {
	cfg    Config
	client *http.Client
}

// Check implements channels.Checker.
func (k checker) Check(ctx context.Context) []channels.Finding {
	if k.cfg.Token == "" {
		return []channels.Finding{{Name: "discord", Skipped: true, Detail: "not configured (DISCORD_BOT_TOKEN unset)"}}
	}
	api := channels.APIBase(k.cfg.APIURL, "https://discord.com/api/v9/")
	c := k.token(ctx, api)
	if !c.OK {
		return []channels.Finding{c}
	}
	return []channels.Finding{c, k.intents(ctx, api)}
}

func (k checker) token(ctx context.Context, api string) channels.Finding {
	c := channels.Finding{Name: "discord:token"}
	var me struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Bot      bool   `json:"bot"`
	}
	status, err := k.get(ctx, api+"users/@me", &me)
	if d, f, limited := channels.RateLimitAdvice("Discord", "users/@me", err); limited {
		c.Detail, c.Fix = d, f
		return c
	}
	switch {
	case err != nil:
		c.Detail, c.Fix = "users/@me: "+err.Error(), "check DISCORD_API_URL and the network"
	case status == http.StatusUnauthorized:
		c.Detail, c.Fix = "users/@me: the token was rejected (HTTP 401)", "set DISCORD_BOT_TOKEN to the bot token from the Developer Portal (Bot → Reset Token)"
	case status != http.StatusOK:
		c.Detail, c.Fix = fmt.Sprintf("users/@me answered HTTP %d", status), "check DISCORD_API_URL"
	default:
		c.OK, c.Detail = true, fmt.Sprintf("authenticated as %s (%s)", me.Username, me.ID)
	}
	return c
}

func (k checker) intents(ctx context.Context, api string) channels.Finding {
	ic := channels.Finding{Name: "discord:intents"}
	var app struct {
		Flags int64 `json:"flags"`
	}
	status, err := k.get(ctx, api+"applications/@me", &app)
	switch {
	case err != nil || status != http.StatusOK:
		ic.Skipped, ic.Detail = true, "could not read the application's flags"
	case !k.cfg.MessageContent:
		ic.OK, ic.Detail = true, "MESSAGE CONTENT intent not needed: mentions, replies and DMs carry their text (discord.message_content: auto with require_mention, or off)"
	case app.Flags&(flagGatewayMessageContent|flagGatewayMessageContentLimited) == 0:
		ic.Detail = "the MESSAGE CONTENT privileged intent is not enabled, and answering without a mention (require_mention: false or message_content: on) needs it"
		ic.Fix = "Developer Portal → your application → Bot → Privileged Gateway Intents → enable MESSAGE CONTENT INTENT, or set discord.message_content: off"
	default:
		ic.OK, ic.Detail = true, "MESSAGE CONTENT intent enabled"
	}
	return ic
}

// get GETs u with the bot token and decodes a 200 answer into into; a 429 is a
// channels.StatusError, any other status is returned with a nil error.
func (k checker) get(ctx context.Context, u string, into any) (int, error) {
	if _, err := url.Parse(u); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bot "+k.cfg.Token)
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(into)
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return resp.StatusCode, &channels.StatusError{Status: resp.StatusCode, Header: resp.Header}
	}
	return resp.StatusCode, nil
}
