package discord

import (
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// The author's display name is the server nickname, else the global name, else the username.
func TestMapMessageActorName(t *testing.T) {
	for name, tt := range map[string]struct {
		author *discordgo.User
		member *discordgo.Member
		want   string
	}{
		"username only": {&discordgo.User{ID: "1", Username: "ann"}, nil, "ann"},
		"global name":   {&discordgo.User{ID: "1", Username: "ann", GlobalName: "Ann L."}, nil, "Ann L."},
		"nickname":      {&discordgo.User{ID: "1", Username: "ann", GlobalName: "Ann L."}, &discordgo.Member{Nick: "annie"}, "annie"},
		"empty nick":    {&discordgo.User{ID: "1", Username: "ann"}, &discordgo.Member{}, "ann"},
	} {
		m := discordgo.Message{ID: "m", ChannelID: "d", Author: tt.author, Member: tt.member, Content: "hi"}
		ev, why := mapMessage(&m, "999", true, time.Unix(1, 0))
		if why != "" || ev.Actor.Name != tt.want {
			t.Errorf("%s: mapMessage Actor.Name = %q (%s), want %q", name, ev.Actor.Name, why, tt.want)
		}
	}
}
