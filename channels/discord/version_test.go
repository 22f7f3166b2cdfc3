package discord

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
)

// approvedDiscordgo is the discordgo release this project may build with. The module list it
// builds from serves v0.29.0 too, but marks it as not an approved release; a plain `go get` or
// `go mod tidy` would take it, so the version is named (`go get github.com/bwmarrin/discordgo@v0.28.1`).
const approvedDiscordgo = "0.28.1"

// TestDiscordgoIsTheApprovedRelease fails when go.mod requires another discordgo than v0.28.1, or
// when another one is linked (a replace directive): both what is declared and what is compiled in.
func TestDiscordgoIsTheApprovedRelease(t *testing.T) {
	why := "v0.28.1 is the approved release; v0.29.0 is served but not approved (pin it: go get github.com/bwmarrin/discordgo@v0.28.1)"
	if got := requiredVersion(t, filepath.Join("..", "..", "go.mod"), "github.com/bwmarrin/discordgo"); got != "v"+approvedDiscordgo {
		t.Errorf("go.mod requires github.com/bwmarrin/discordgo %s, want v%s: %s", got, approvedDiscordgo, why)
	}
	if discordgo.VERSION != approvedDiscordgo {
		t.Errorf("linked discordgo.VERSION = %s, want %s: %s", discordgo.VERSION, approvedDiscordgo, why)
	}
}

// requiredVersion is the version go.mod's require lines name for module path ("" if none).
func requiredVersion(t *testing.T, gomod, path string) string {
	t.Helper()
	f, err := os.Open(gomod)
	if err != nil {
		t.Fatalf("open %s: %v", gomod, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && fields[0] == path {
			return fields[1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", gomod, err)
	}
	return ""
}
