package discord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate"
)

// A turn's posts are made idempotent two ways, since Discord has no message metadata:
//
//   - each part of a turn's answer or approval prompt is created with a nonce derived from the
//     turn, its kind and the part's index, with enforce_nonce: a create repeated within Discord's
//     nonce window (a few minutes) returns the message already posted instead of a second one;
//   - the last part carries an invisible marker at its end (a space, so a URL before it stays
//     intact, then zero-width characters spelling the same hash), so FindReply can recognise it in the channel's history after that window
//     (Discord returns a message's nonce only in the create response and the gateway event,
//     not when listing messages).

// markerLead opens the marker; markerDigits are the zero-width characters that spell its bits
// two at a time. None of them is whitespace, so Discord keeps them, and none is visible.
const markerLead = '\u2063' // INVISIBLE SEPARATOR

var markerDigits = [4]rune{'\u200b', '\u200c', '\u200d', '\u2060'}

// markerBytes is how much of the turn's hash the marker spells (4 characters a byte).
const markerBytes = 8

// markerLen is the marker's length in characters (textLen counts it so).
const markerLen = 2 + 4*markerBytes

// Lookup bounds: FindReply reads at most replyPages pages of replyPage messages, newest first.
const (
	replyPage  = 100
	replyPages = 5
)

// turnKey is the "turn/kind" a turn's final post is known by, or "" when out is neither a
// turn's answer nor its approval prompt.
func turnKey(turn string, kind echogate.OutboundKind) string {
	if turn == "" {
		return ""
	}
	switch kind {
	case echogate.OutReply:
		return turn + "/reply"
	case echogate.OutApprovalPrompt:
		return turn + "/approval_prompt"
	}
	return ""
}

func turnHash(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// partNonce is the nonce of part i of the post known by key: 24 hex characters (Discord allows
// 25), the same on every attempt, so a repeated create returns the first message.
func partNonce(key string, i int) string {
	return hex.EncodeToString(turnHash(key + "#" + strconv.Itoa(i)))[:24]
}

// marker is the invisible end of the last message of the post known by key.
func marker(key string) string {
	var b strings.Builder
	b.WriteByte(' ')
	b.WriteRune(markerLead)
	for _, x := range turnHash(key)[:markerBytes] {
		for shift := 6; shift >= 0; shift -= 2 {
			b.WriteRune(markerDigits[(x>>shift)&3])
		}
	}
	return b.String()
}

// VisibleText is the content of a message the bot posted without the invisible marker that ends
// a turn's answer or approval prompt (see FindReply): the text as the model wrote it.
func VisibleText(content string) string { return stripMarker(content) }

// stripMarker removes a marker from the end of content.
func stripMarker(content string) string {
	r := []rune(content)
	if n := len(r) - markerLen; n >= 0 && r[n] == ' ' && r[n+1] == markerLead {
		return string(r[:n])
	}
	return content
}

// withMarker splits text into messages whose last one ends with the marker of key (none when
// key is ""), each within MaxMessageLength.
func withMarker(text, key string) []string {
	if key == "" {
		return splitMessage(text, MaxMessageLength)
	}
	chunks := splitMessage(text, MaxMessageLength-markerLen)
	if n := len(chunks); n > 0 {
		chunks[n-1] += marker(key)
	}
	return chunks
}

// listedMessage is what FindReply reads of a listed message.
type listedMessage struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Author  struct {
		ID string `json:"id"`
	} `json:"author"`
}

// FindReply looks in the conversation's channel (a thread is a channel) for the last message of
// kind that turn posted, so that recovery after a crash does not post it twice: the bot's
// message ending with the turn's marker. found is false when none is among the channel's last 500 messages. It blocks on
// GET /channels/{id}/messages (429s retried as for every call); text is the message's content
// without the marker (the last part of a longer answer).
func (c *Channel) FindReply(ctx context.Context, conv echogate.ConversationRef, turn string, kind echogate.OutboundKind) (_ echogate.MessageRef, _ string, _ bool, err error) {
	defer c.recovered(&err, "find reply")
	key := turnKey(turn, kind)
	if conv.Channel == "" || key == "" {
		return echogate.MessageRef{}, "", false, fmt.Errorf("discord: find reply: %w: need a channel, a turn and a reply or prompt kind", ErrNoChannel)
	}
	mark := marker(key)
	before := ""
	for page := 0; page < replyPages; page++ {
		msgs, err := c.listMessages(ctx, conv.Channel, before)
		if err != nil {
			return echogate.MessageRef{}, "", false, fmt.Errorf("discord: find the answer of turn %s in %s: %w", turn, conv.Channel, err)
		}
		bot := c.BotID()
		for _, m := range msgs {
			if bot != "" && m.Author.ID != bot {
				continue
			}
			if strings.HasSuffix(m.Content, mark) {
				c.posted.add(m.ID)
				return echogate.MessageRef{Platform: echogate.PlatformDiscord, Channel: conv.Channel, ID: m.ID}, stripMarker(m.Content), true, nil
			}
		}
		if len(msgs) < replyPage {
			break
		}
		before = msgs[len(msgs)-1].ID
	}
	return echogate.MessageRef{}, "", false, nil
}

// listMessages reads one page of the channel's messages, newest first, before the message id
// before ("" for the newest).
func (c *Channel) listMessages(ctx context.Context, channelID, before string) ([]listedMessage, error) {
	q := url.Values{"limit": {strconv.Itoa(replyPage)}}
	if before != "" {
		q.Set("before", before)
	}
	bucket := discordgo.EndpointChannelMessages(channelID)
	var raw []byte
	err := c.call(ctx, "list messages of "+channelID, true, func(opts ...discordgo.RequestOption) error {
		var err error
		raw, err = c.sess.RequestWithBucketID(http.MethodGet, bucket+"?"+q.Encode(), nil, bucket, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	var msgs []listedMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, fmt.Errorf("decode listed messages: %v (body %.200q)", err, raw)
	}
	return msgs, nil
}
