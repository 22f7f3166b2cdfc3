# echogate — make run (gateway on embedded SQLite, web chat, demo model without a key), make test.
GO       ?= go
BIN      ?= bin/echogate
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
PKGS     := ./...

.PHONY: all build run test test-short chaos chaos-schedules bench fuzz lint fmt vet tidy docker clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/echogate

## run: the gateway on http://127.0.0.1:8080 (SQLite in ./data; offline demo model without OPENAI_API_KEY)
run:
	@echo "compiling $(BIN) (the first build compiles every dependency: a few minutes; later builds take seconds)…"
	@$(MAKE) --no-print-directory build
	./$(BIN) serve

## test: every test with the race detector (Postgres tests run when DATABASE_URL is set; CI sets it),
## then every benchmark once, so a broken benchmark fails here rather than in make bench
test:
	@GO=$(GO) sh scripts/need-cc.sh
	@echo "== 1/3 go vet: every package (compiles them first: minutes on a cold cache) =="
	$(GO) vet $(PKGS)
	@$(pg-skip-note)
	@echo "== 2/3 tests with the race detector (cmd/echogate takes longest) =="
	@rc=0; $(GO) test -race -count=1 -timeout 20m $(PKGS) || rc=$$?; $(pg-skip-note); \
	echo "== 3/3 benchmarks, one iteration each (a failing benchmark is a broken test; make bench gives the figures) =="; \
	log=$$(mktemp); if $(GO) test -count=1 -run '^$$' -bench . -benchtime 1x -timeout 10m $(PKGS) > $$log 2>&1; then \
		echo "benchmarks ok"; else rc=1; grep -E -B2 -A20 '^(--- FAIL|FAIL|panic)' $$log | head -80; fi; rm -f $$log; exit $$rc

# pg-skip-note says, before and after the run, which suites `go test` reports as ok although they
# skipped: without a PostgreSQL URL the PostgreSQL tests skip (CI sets one; they fail there).
define pg-skip-note
if [ -z "$$DATABASE_URL$$ECHOGATE_TEST_DATABASE_URL" ]; then \
	echo "NOTE: DATABASE_URL is not set, so the PostgreSQL tests are skipped (their packages still print ok):"; \
	echo "      storage/postgres, and the PostgreSQL parts of cmd/echogate (replicas, memory and knowledge on pgvector)."; \
	echo "      To run them: sudo scripts/pg-test-cluster.sh install; eval \"\$$(scripts/pg-test-cluster.sh start)\"; make test"; \
fi
endef

test-short:
	$(GO) test -count=1 -short $(PKGS)

## chaos: the SIGKILL chaos test at length (its short form runs in make test): 400 messages over
## 20 Slack sessions, at least 25 kills; then, with PostgreSQL (DATABASE_URL), three replicas
## under SIGKILLs and a rolling deploy: 20 sessions over Slack Socket Mode, the Events API,
## Discord and the web chat (through PgBouncer too when ECHOGATE_TEST_PGBOUNCER_URL is set);
## prints the counts and the takeover times
chaos:
	@$(GO) test -count=1 -timeout 30m -run '^TestChaos$$' -v ./cmd/echogate \
		-chaos.sessions=$(or $(CHAOS_SESSIONS),20) -chaos.messages=$(or $(CHAOS_MESSAGES),20) -chaos.kills=$(or $(CHAOS_KILLS),25) \
		> chaos.log 2>&1; status=$$?; grep -E '^(--- |PASS|FAIL|ok)|chaos_test.go' chaos.log; echo "(full log: chaos.log)"; \
	$(GO) test -count=1 -timeout 30m -run '^(TestReplicaChaos|TestReplicaChaosThroughPgBouncer|TestRollingDeploy)$$' -v ./cmd/echogate \
		-rchaos.sessions=$(or $(CHAOS_SESSIONS),20) -rchaos.messages=6 -rchaos.kills=$(or $(CHAOS_KILLS),25) -rchaos.deploys=2 \
		> chaos-replicas.log 2>&1; rstatus=$$?; grep -E '^(--- |PASS|FAIL|ok)|replica_chaos_check_test.go|replica_deploy_test.go:[0-9]+: (rolling|replica)' chaos-replicas.log; \
	echo "(full log: chaos-replicas.log)"; [ $$status -eq 0 ] && [ $$rstatus -eq 0 ]

## chaos-schedules: the scheduled-work chaos test at length: jobs every 2s, at least 200 slots run
## and 25 SIGKILLs (two replicas on PostgreSQL when DATABASE_URL is set, else one on SQLite)
chaos-schedules:
	@$(GO) test -count=1 -timeout 30m -run '^TestScheduleChaos$$' -v ./cmd/echogate \
		-schedchaos.slots=$(or $(CHAOS_SLOTS),200) -schedchaos.kills=$(or $(CHAOS_KILLS),25) \
		> chaos-schedules.log 2>&1; status=$$?; grep -E '^(--- |PASS|FAIL|ok)|chaos_schedule_test.go' chaos-schedules.log; echo "(full log: chaos-schedules.log)"; exit $$status

## bench: benchmarks and the load figures quoted in the notes (reports, never gates); bench/turns is
## the pipeline in-process, bench/realpath the serve binary through POST /api/chat and Slack Socket
## Mode (the fake Slack) with an HTTP model
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./agent/... ./pipeline/... ./storage/... ./channels/... ./tools/...
	$(GO) test -run '^$$' -bench . -benchtime 100x ./bench/memkb
	$(GO) run ./bench/turns
	$(GO) run ./bench/realpath
	$(GO) run ./bench/vectors $(if $(DATABASE_URL),-pg,)

## fuzz: every fuzz target for FUZZTIME each (default 30s); their seed corpora (testdata/fuzz) also run in make test
fuzz:
	GO=$(GO) FUZZTIME=$(or $(FUZZTIME),30s) bash scripts/fuzz.sh

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

docker:
	docker build -t echogate:$(VERSION) .

clean:
	rm -rf bin
