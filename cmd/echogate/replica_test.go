package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
)

// testPostgres returns a DATABASE_URL for a schema of this test's own (dropped afterwards). It
// skips without a test database, and fails when CI is set: there the tests must run.
func testPostgres(t *testing.T) string {
	t.Helper()
	base := os.Getenv("ECHOGATE_TEST_DATABASE_URL")
	if base == "" {
		base = os.Getenv("DATABASE_URL")
	}
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but no PostgreSQL: set DATABASE_URL (see scripts/pg-test-cluster.sh)")
		}
		t.Skip("postgres tests skipped: set DATABASE_URL=postgres://… (see scripts/pg-test-cluster.sh) to run them")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(ctx)
	// The extension must live in public, where every test schema's search_path finds it: a
	// gateway migrating first inside its own schema would create it there (and the storage
	// tests, running beside these, would find it in a schema about to be dropped). The same
	// lock Migrate takes, so this never races a migration's CREATE EXTENSION.
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('echogate:migrate', 0))`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public`)
		return err
	})
	if err != nil {
		t.Fatalf("create the vector extension in public (is pgvector installed? scripts/pg-test-cluster.sh install): %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "replica_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema+",public") // pgx passes it as a run-time parameter
	u.RawQuery = q.Encode()
	return u.String()
}

// chatStream posts one message and reads its SSE stream; started is closed at the first event.
func chatStream(base, session, text string, started chan<- struct{}) (status, answer string, err error) {
	body, _ := json.Marshal(map[string]string{"session": session, "user": "u-" + session, "text": text})
	resp, err := http.Post(base+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", "", fmt.Errorf("POST /api/chat = %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
			if started != nil {
				close(started)
				started = nil
			}
		case strings.HasPrefix(line, "data: ") && (event == "done" || event == "error"):
			var d map[string]any
			_ = json.Unmarshal([]byte(line[6:]), &d)
			if event == "done" {
				st, _ := d["status"].(string)
				txt, _ := d["text"].(string)
				return st, txt, nil
			}
		}
	}
	return "", "", fmt.Errorf("stream ended without done: %v", sc.Err())
}

func transcriptOf(t *testing.T, base, session string) []echogate.StoredMessage {
	t.Helper()
	var hist []echogate.StoredMessage
	getJSON(t, base+"/api/sessions/transcript?session="+url.QueryEscape(session)+"&limit=1000", &hist)
	return hist
}

func turnsOf(t *testing.T, base, session string) []echogate.TurnRecord {
	t.Helper()
	var turns []echogate.TurnRecord
	getJSON(t, base+"/api/turns?session="+url.QueryEscape(session)+"&limit=1000", &turns)
	return turns
}

func echoModel() *agenttest.FakeOpenAI {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{})
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		last := ""
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				last = fmt.Sprint(req.Messages[i].Content)
				break
			}
		}
		return agenttest.Answer{Text: "echo: " + last, Latency: 15 * time.Millisecond}, true
	})
	return fake
}

// TestReplicasAnswerEachMessageOnce runs two gateway processes on one PostgreSQL: 200 messages in
// 20 sessions, each sent to a replica chosen at random as soon as the previous message of its
// session started (so replicas contend for sessions) → every message answered exactly once, in
// order, and no two turns of one session overlap in time.
func TestReplicasAnswerEachMessageOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two gateway processes")
	}
	for _, path := range databasePaths {
		t.Run(path, func(t *testing.T) { replicasAnswerEachMessageOnce(t, testDatabase(t, path)) })
	}
}

func replicasAnswerEachMessageOnce(t *testing.T, db map[string]string) {
	fake := echoModel()
	defer fake.Close()
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "k", "ECHOGATE_LOG_LEVEL": "warn"}
	for k, v := range db {
		vars[k] = v
	}
	var replicas []*e2eGateway
	for i := 0; i < 2; i++ {
		v := cloneVars(vars)
		v["ECHOGATE_DATA_DIR"] = t.TempDir()
		replicas = append(replicas, startBinaryGateway(t, v, ""))
	}

	const sessions, perSession = 20, 10
	type result struct{ status, answer string }
	results := make([][]result, sessions)
	var wg sync.WaitGroup
	errs := make(chan error, sessions*perSession)
	for s := 0; s < sessions; s++ {
		results[s] = make([]result, perSession)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inner sync.WaitGroup
			for i := 0; i < perSession; i++ {
				n, _ := rand.Int(rand.Reader, big.NewInt(2))
				base := replicas[n.Int64()].base
				started := make(chan struct{})
				inner.Add(1)
				go func() {
					defer inner.Done()
					st, ans, err := chatStream(base, fmt.Sprintf("r%d", s), fmt.Sprintf("s%d-m%d", s, i), started)
					if err != nil {
						errs <- err
						close(started)
						return
					}
					results[s][i] = result{st, ans}
				}()
				select { // the next message goes out once this one is being answered
				case <-started:
				case <-time.After(30 * time.Second):
					errs <- fmt.Errorf("session %d message %d: no stream within 30s", s, i)
				}
			}
			inner.Wait()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for s := 0; s < sessions; s++ {
		for i := 0; i < perSession; i++ {
			if r := results[s][i]; r.status != "done" || r.answer != fmt.Sprintf("echo: s%d-m%d", s, i) {
				t.Errorf("session %d message %d: %+v, want done with its echo", s, i, r)
			}
		}
		key := fmt.Sprintf("web:r%d", s)
		hist := transcriptOf(t, replicas[0].base, key)
		var users, answers []string
		for _, m := range hist {
			switch m.Message.Role {
			case echogate.RoleUser:
				users = append(users, m.Message.Content)
			case echogate.RoleAssistant:
				answers = append(answers, m.Message.Content)
			}
		}
		for i := 0; i < perSession; i++ {
			if i >= len(users) || users[i] != fmt.Sprintf("s%d-m%d", s, i) {
				t.Fatalf("session %d: user messages %q are not each message once, in order", s, users)
			}
		}
		if len(users) != perSession || len(answers) != perSession {
			t.Errorf("session %d: %d user messages and %d answers, want %d each", s, len(users), len(answers), perSession)
		}
		turns := turnsOf(t, replicas[1].base, key)
		sort.Slice(turns, func(i, j int) bool { return turns[i].StartedAt.Before(turns[j].StartedAt) })
		for i := 1; i < len(turns); i++ {
			if turns[i].StartedAt.Before(turns[i-1].EndedAt) {
				t.Errorf("session %d: turn %s started at %s before turn %s ended at %s", s, turns[i].ID, turns[i].StartedAt, turns[i-1].ID, turns[i-1].EndedAt)
			}
		}
	}
	if n := len(fake.ChatRequests()); n != sessions*perSession {
		t.Errorf("model called %d times, want %d (one per message)", n, sessions*perSession)
	}
}

// TestReplicaKilledMidTurn: kill -9 the replica running a turn; the other replica takes the event
// over, closes the dead turn as failed and answers once.
func TestReplicaKilledMidTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two gateway processes")
	}
	for _, path := range databasePaths {
		t.Run(path, func(t *testing.T) { replicaKilledMidTurn(t, testDatabase(t, path)) })
	}
}

func replicaKilledMidTurn(t *testing.T, db map[string]string) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{})
	defer fake.Close()
	hold := make(chan struct{})
	var calls sync.WaitGroup
	calls.Add(1)
	var first sync.Once
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		a := agenttest.Answer{Text: "finished by the survivor"}
		first.Do(func() {
			a.Hold = hold // the first attempt hangs until its replica is killed
			calls.Done()
		})
		return a, true
	})
	cfg := writeConfig(t, "agent: {replay_after: 2s}\napproval: {check_interval: 200ms}\n")
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "k"}
	for k, v := range db {
		vars[k] = v
	}
	a := startBinaryGateway(t, withDataDir(t, vars), cfg)
	b := startBinaryGateway(t, withDataDir(t, vars), cfg)

	go func() { _, _, _ = chatStream(a.base, "k1", "please answer", nil) }()
	calls.Wait() // replica A is inside the model call
	a.kill()
	close(hold)

	deadline := time.Now().Add(30 * time.Second)
	var hist []echogate.StoredMessage
	for {
		hist = transcriptOf(t, b.base, "web:k1")
		if len(hist) >= 2 && hist[len(hist)-1].Message.Role == echogate.RoleAssistant {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the surviving replica did not answer within 30s; transcript %+v\nlog B:\n%s", hist, b.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var users, answers int
	for _, m := range hist {
		switch m.Message.Role {
		case echogate.RoleUser:
			users++
		case echogate.RoleAssistant:
			answers++
			if m.Message.Content != "finished by the survivor" {
				t.Errorf("answer = %q", m.Message.Content)
			}
		}
	}
	if users != 1 || answers != 1 {
		t.Errorf("transcript has %d user messages and %d answers, want one each: %+v", users, answers, hist)
	}
	var failed, done int
	for _, tr := range turnsOf(t, b.base, "web:k1") {
		switch tr.Status {
		case echogate.TurnFailed:
			failed++
		case echogate.TurnDoneSt:
			done++
		}
	}
	if failed != 1 || done != 1 {
		t.Errorf("turns: %d failed, %d done; want the dead replica's turn failed and one done", failed, done)
	}
}

func withDataDir(t *testing.T, vars map[string]string) map[string]string {
	v := cloneVars(vars)
	v["ECHOGATE_DATA_DIR"] = t.TempDir()
	return v
}
