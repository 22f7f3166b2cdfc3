package slack

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// modelPings is model-written text holding every way of pinging people in Slack: broadcast
// and user, channel, user-group and date control sequences, Markdown links whose target is one
// of them, and the same inside code, a table, a quote, a heading and a list.
const modelPings = "Hey <!channel> <!here|here> <!everyone> <@U0PING> <@W0PING|bob> <#C0PING|general> <!subteam^S0PING> " +
	"<!date^1392734382^{date}|Feb 18>\n" +
	"Links: [all](!channel) [now](!here) [every](!everyone) [you](@U0PING) [room](#C0PING) ![pic](!here) " +
	"[x]( <!channel>) [y](<@U0PING>) [z](\\!here) [w](&#33;channel) <mailto:a@b.example> [ok](https://ok.example/a?b=1&c=2)\n" +
	"`<!channel>` and\n```\n<!here> <@U0PING>\n```\n| <!channel> | b |\n|---|---|\n| <@U0PING> | 2 |\n" +
	"> quoted <!everyone>\n# Title <!here>\n- item [z](@U0PING)\n[ref]: !channel\n"

// rePingTarget finds a Markdown link destination that is a Slack control sequence: a native
// stream's markdown_text is Markdown, which Slack turns into its own markup.
var rePingTarget = regexp.MustCompile(`\]\(\s*(?:<|&lt;)?\s*\\?[!@#]|\]:\s*(?:<|&lt;)?\\?[!@#]`)

// pingIn returns the first control sequence in s, or "". In Markdown (markdown), a link whose
// destination is one counts too.
func pingIn(s string, markdown bool) string {
	for _, p := range []string{"<!", "<@", "<#"} {
		if i := strings.Index(s, p); i >= 0 {
			return s[i:min(len(s), i+24)]
		}
	}
	if loc := rePingTarget.FindStringIndex(s); markdown && loc != nil {
		return s[loc[0]:min(len(s), loc[1]+16)]
	}
	return ""
}

// stringsOf returns s and, when s is JSON (blocks, chunks), every string inside it: the JSON
// encoder writes '<' as \u003c, which a plain search would miss. parsed counts the mrkdwn text
// objects without verbatim: true, in which Slack would link "@here" written as a plain word.
func stringsOf(s string) (out []string, parsed int) {
	out = []string{s}
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return out, 0
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if x["type"] == "mrkdwn" && x["verbatim"] != true {
				parsed++
			}
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out, parsed
}

// assertNoPings fails when any call to Slack (every parameter, JSON decoded) or any
// response_url answer carries a control sequence.
func assertNoPings(t *testing.T, srv *slacktest.Server) {
	t.Helper()
	for _, c := range srv.Calls() {
		for k, v := range c.Params {
			if k == "link_names" && v != "" && v != "0" && v != "false" {
				t.Errorf("%s sent link_names=%q, want it unset (Slack would turn @channel into a ping)", c.Method, v)
			}
			if k == "parse" && v == "full" {
				t.Errorf("%s sent parse=full, want it unset", c.Method)
			}
			texts, parsed := stringsOf(v)
			if parsed > 0 {
				t.Errorf("%s %s has %d mrkdwn texts without verbatim: true, want every one verbatim", c.Method, k, parsed)
			}
			for _, s := range texts {
				if p := pingIn(s, k == "markdown_text" || k == "chunks"); p != "" {
					t.Errorf("%s %s carries %q, want no <!, <@, <# or link to one from model text (in %.200q)", c.Method, k, p, s)
					break
				}
			}
		}
	}
	for _, r := range srv.Responses() {
		if p := pingIn(r.Text, false); p != "" {
			t.Errorf("response_url answer carries %q, want none (in %.200q)", p, r.Text)
		}
	}
}

// waitCalls waits until method was called at least n times.
func waitCalls(t *testing.T, srv *slacktest.Server, method string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitFor(ctx, func() bool { return len(srv.CallsTo(method)) >= n }); err != nil {
		t.Fatalf("waiting for %d %s calls: %v (calls %d)", n, method, err, len(srv.CallsTo(method)))
	}
}

// streamPings streams modelPings in small deltas (a control sequence cut across deltas), waits
// for shown text after the first part, and finishes with final.
func streamPings(t *testing.T, e *env, conv echogate.ConversationRef, shown string, final string) {
	t.Helper()
	ctx := context.Background()
	st, err := e.ch.StartStream(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv})
	if err != nil {
		t.Fatalf("StartStream = %v", err)
	}
	half := len(modelPings) / 2
	for i := 0; i < half; i += 3 {
		if err := st.Append(ctx, modelPings[i:min(i+3, half)]); err != nil {
			t.Fatalf("Append = %v", err)
		}
	}
	waitCalls(t, e.srv, shown, 1)
	for i := half; i < len(modelPings); i += 5 {
		if err := st.Append(ctx, modelPings[i:min(i+5, len(modelPings))]); err != nil {
			t.Fatalf("Append = %v", err)
		}
	}
	if _, err := st.Finish(ctx, final); err != nil {
		t.Fatalf("Finish = %v", err)
	}
}

// Issue 36 finding 6: model text must not ping anyone, on any path to Slack: a final post, an
// approval prompt with buttons, a long answer split into messages, an ephemeral answer, a
// reply edited with chat.update, a native stream (start, append, stop, and the follow-ups past
// its cap), its task cards and plan, and the thread status.
func TestModelTextCannotPingTheWorkspace(t *testing.T) {
	dm := echogate.ConversationRef{Platform: "slack", Channel: "D1", DM: true}
	dmThread := echogate.ConversationRef{Platform: "slack", Channel: "D2", DM: true, Thread: "1700000900.000100"}
	long := strings.Repeat(modelPings+"\n", maxMessageChars/len(modelPings)+2)
	for name, tt := range map[string]struct {
		noNative bool
		run      func(t *testing.T, e *env)
		want     map[string]int // at least this many calls of each method
	}{
		"final post": {noNative: true, want: map[string]int{"chat.postMessage": 1}, run: func(t *testing.T, e *env) {
			if _, err := e.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutReply, Conversation: dm, Text: modelPings}); err != nil {
				t.Fatalf("Send = %v", err)
			}
		}},
		"approval prompt": {want: map[string]int{"chat.postMessage": 1}, run: func(t *testing.T, e *env) {
			out := echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: dm, Text: "🔐 run `x` with\n" + modelPings,
				Reactions: []string{echogate.ReactionApprove}}
			if _, err := e.ch.Send(context.Background(), out); err != nil {
				t.Fatalf("Send = %v", err)
			}
		}},
		"split long message": {want: map[string]int{"chat.postMessage": 2}, run: func(t *testing.T, e *env) {
			if _, err := e.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutReply, Conversation: dm, Text: long}); err != nil {
				t.Fatalf("Send = %v", err)
			}
		}},
		"ephemeral answer": {run: func(t *testing.T, e *env) {
			out := echogate.Outbound{Kind: echogate.OutNotice, Conversation: dm, Text: modelPings, Interaction: e.srv.ResponseURL("r1")}
			if _, err := e.ch.Send(context.Background(), out); err != nil {
				t.Fatalf("Send = %v", err)
			}
			if n := len(e.srv.Responses()); n != 1 {
				t.Fatalf("response_url answers = %d, want 1", n)
			}
		}},
		"chat.update stream": {noNative: true, want: map[string]int{"chat.postMessage": 1, "chat.update": 1}, run: func(t *testing.T, e *env) {
			streamPings(t, e, dm, "chat.postMessage", "")
		}},
		"native stream": {want: map[string]int{"chat.startStream": 1, "chat.appendStream": 2, "chat.stopStream": 1}, run: func(t *testing.T, e *env) {
			more := strings.Repeat(modelPings, 2*maxStreamChunk/len(modelPings)+1)
			streamPings(t, e, dmThread, "chat.startStream", modelPings+"\nMore: <!channel> [all](!here)\n"+more)
		}},
		"native stream past its cap": {want: map[string]int{"chat.startStream": 1, "chat.update": 1, "chat.postMessage": 1}, run: func(t *testing.T, e *env) {
			streamPings(t, e, dmThread, "chat.startStream", modelPings+long)
		}},
		"native stream rewritten": {want: map[string]int{"chat.startStream": 1, "chat.update": 1}, run: func(t *testing.T, e *env) {
			streamPings(t, e, dmThread, "chat.startStream", "Another answer: "+modelPings)
		}},
		// A user's escaped text (what Slack delivers for a typed "<!channel>") is unescaped for
		// the model; the model echoing it back, or the thread named after it, must not turn it
		// into a ping.
		"echoed user text and thread title": {want: map[string]int{"chat.startStream": 1, "assistant.threads.setTitle": 1}, run: func(t *testing.T, e *env) {
			m := slacktest.DM("D3", "U1", "1700000950.000200", "&lt;!channel&gt; [x](!here) &lt;@U0PING&gt; please")
			m["thread_ts"] = "1700000950.000100"
			e.push(m, slacktest.Delivery{})
			e.rec.waitAnswered(1)
			e.noErrors()
		}},
		"task cards and plan": {want: map[string]int{"chat.startStream": 1, "assistant.threads.setStatus": 1}, run: func(t *testing.T, e *env) {
			ctx := context.Background()
			view := e.ch.StartActivity(ctx, dmThread, echogate.MessageRef{Platform: "slack", Channel: "D2", ID: "1700000900.000200"})
			st, err := e.ch.StartStream(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: dmThread})
			if err != nil {
				t.Fatalf("StartStream = %v", err)
			}
			tasks := []echogate.ActivityTask{{ID: "call_1", Title: "<!channel> mcp__<@U0PING>", Status: echogate.TaskRunning}}
			view.Show(echogate.Activity{Status: "is running <!here>…", Tools: []string{"<!here>"}, Tasks: tasks,
				Plan: "**Ping <!everyone> [all](!channel)**\n🔄 1. <@U0PING>\n"})
			_ = st.Append(ctx, "Working")
			waitCalls(t, e.srv, "chat.startStream", 1)
			waitCalls(t, e.srv, "assistant.threads.setStatus", 1)
			tasks[0].Status = echogate.TaskDone
			view.Show(echogate.Activity{Status: "is thinking…", Tasks: tasks})
			if _, err := st.Finish(ctx, "Working, done."); err != nil {
				t.Fatalf("Finish = %v", err)
			}
			view.End()
		}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, true, func(c *Config) { c.DisableNativeStreaming = tt.noNative })
			tt.run(t, e)
			for method, n := range tt.want {
				if got := len(e.srv.CallsTo(method)); got < n {
					t.Errorf("%s calls = %d, want >= %d (the path under test was not taken)", method, got, n)
				}
			}
			assertNoPings(t, e.srv)
		})
	}
}

// What the reader sees: the model's control sequences and ping links are shown as text, not
// deleted, while real links stay links.
func TestModelTextCannotPingTheWorkspaceShowsTheText(t *testing.T) {
	for in, want := range map[string]string{
		"<!channel> hi":                      "&lt;!channel&gt; hi",
		"ask <@U0PING|bob>":                  "ask &lt;@U0PING|bob&gt;",
		"[all](!channel)":                    "all (!channel)",
		"[you](@U0PING) now":                 "you (@U0PING) now",
		"[room](#C0PING)":                    "room (#C0PING)",
		"[!here](!here)":                     "!here",
		"![pic](!here)":                      "pic (!here)",
		"[x](<!channel>)":                    "x (&lt;!channel&gt;)",
		"[*x*](@U1)":                         "*x* (@U1)",
		"[docs](https://x.example/a?b&c)":    "<https://x.example/a?b&amp;c|docs>",
		"[mail](mailto:a@b.example)":         "<mailto:a@b.example|mail>",
		"<https://x.example>":                "<https://x.example>",
		"[rel](/relative/path)":              "rel (/relative/path)",
		"a\x00b\x01c":                        "a\ufffdb\ufffdc",
		"[a](https://x.example) \x000\x00 b": "<https://x.example|a> \ufffd0\ufffd b",
	} {
		if got := toMrkdwn(in); got != want {
			t.Errorf("toMrkdwn(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"<!channel> & <@U1>":      "&lt;!channel> &amp; &lt;@U1>",
		"[all](!channel)":         "[all](%21channel)",
		"[you](@U1) [r](#C1)":     "[you](%40U1) [r](%23C1)",
		"[x]( <!here>)":           "[x]( &lt;%21here>)",
		"[z](\\!here)":            "[z](\\%21here)",
		"[ref]: @U1":              "[ref]: %40U1",
		"[ok](https://x.example)": "[ok](https://x.example)",
		"> quote, #1 & @bob!":     "> quote, #1 &amp; @bob!",
	} {
		if got, end := safeMarkdown(in, 0, -1); got != want || end != len(in) {
			t.Errorf("safeMarkdown(%q) = %q, %d; want %q, %d", in, got, end, want, len(in))
		}
	}
}

// A native stream's text is escaped piece by piece: the pieces of any cut concatenate to the
// escaping of the whole, so a control sequence cut across appendStream calls stays escaped.
func TestModelTextCannotPingTheWorkspaceAcrossStreamPieces(t *testing.T) {
	whole, _ := safeMarkdown(modelPings, 0, -1)
	for _, limit := range []int{5, 6, 7, 64} {
		var b strings.Builder
		for at := 0; at < len(modelPings); {
			piece, end := safeMarkdown(modelPings, at, limit)
			if end == at {
				t.Fatalf("safeMarkdown(…, %d, %d) made no progress", at, limit)
			}
			if len(piece) > limit {
				t.Fatalf("safeMarkdown(…, %d, %d) = %d bytes, want <= %d", at, limit, len(piece), limit)
			}
			b.WriteString(piece)
			at = end
		}
		if got := b.String(); got != whole {
			t.Errorf("pieces of %d bytes = %q, want %q", limit, got, whole)
		}
	}
	if p := pingIn(whole, true); p != "" {
		t.Errorf("safeMarkdown(modelPings) carries %q", p)
	}
}
