# delayq developer targets. `make test` is the test command: it installs Redis first if needed
# (the tests start real redis-server processes), python3, node, curl and jq (a test runs the
# consumer examples of docs/consumers.md), and promtool (a test checks docs/prometheus/alerts.yml).

GO ?= go

.PHONY: all test test-short screenshots ensure-chromium lint lint-openapi install bench bench-smoke bench-peers script-cost build run docker ensure-redis ensure-example-tools ensure-promtool

all: lint test

ensure-redis:
	@bash scripts/ensure-redis.sh

# python3, node, curl and jq: a test runs the consumer examples of docs/consumers.md with them.
ensure-example-tools:
	@bash scripts/ensure-example-tools.sh

# promtool (Debian's prometheus package, its server kept from starting): a test checks the alert
# rules of docs/prometheus and runs their unit tests (cmd/delayq/internal/metrics).
ensure-promtool:
	@bash scripts/ensure-promtool.sh

# PostgreSQL's server binaries (Debian's postgresql package, its cluster kept stopped): the
# archive's tests start servers of their own (internal/pgtest).
.PHONY: ensure-postgres
ensure-postgres:
	@bash scripts/ensure-postgres.sh

# beanstalkd (Debian's beanstalkd package, its service kept from starting): the beanstalkd front
# end's tests compare its replies with a real beanstalkd's (cmd/delayq/internal/beanstalktest).
.PHONY: ensure-beanstalkd
ensure-beanstalkd:
	@bash scripts/ensure-beanstalkd.sh

# Node.js and npm (Debian's nodejs and npm packages): a test runs a Node.js beanstalkd client
# against the beanstalkd front end (cmd/delayq/internal/beanstalkd/nodeclient).
.PHONY: ensure-node
ensure-node:
	@bash scripts/ensure-node.sh

# Chromium: the dashboard's browser tests drive it headless (cmd/delayq/internal/dashboard).
ensure-chromium:
	@bash scripts/ensure-chromium.sh

# Every package of the three modules of go.work: the library (., with archive), middleware and
# the delayq command with its server and tools (cmd/delayq). The peer benchmark (cmd/delayq/bench/peers)
# is a module outside the workspace, so that asynq never becomes a requirement of delayq's.
PACKAGES = ./... ./middleware/... ./cmd/delayq/...

test: ensure-redis ensure-example-tools ensure-chromium ensure-promtool ensure-postgres ensure-beanstalkd ensure-node
	$(GO) test -race -count=1 -timeout 15m $(PACKAGES)
	cd cmd/delayq/bench/peers && $(GO) test -count=1 -short -timeout 5m ./...

# The library's and the HTTP API's tests, with redis-server the only thing installed (tests
# that need PostgreSQL skip themselves): the quick loop while working on the core.
CORE_PACKAGES = . ./delayqtest/ ./middleware/ ./internal/ackq/ ./cmd/delayq/internal/apiclient/ \
	./cmd/delayq/internal/apiv1/ ./internal/coalesce/ ./cmd/delayq/internal/httpapi/ ./internal/ids/ ./internal/keys/ \
	./internal/redisproc/ ./internal/redistest/ ./internal/redisurl/ ./internal/shardsub/ \
	./internal/store/ ./internal/testwait/ ./internal/tracing/ ./internal/wake/

.PHONY: test-core
test-core: ensure-redis
	DELAYQ_TEST_CORE=1 $(GO) test -race -count=1 -timeout 10m $(CORE_PACKAGES)

test-short: ensure-redis ensure-example-tools ensure-chromium ensure-promtool ensure-postgres ensure-beanstalkd ensure-node
	$(GO) test -race -count=1 -timeout 15m -short $(PACKAGES)

# The fault-injection suite (cmd/delayq/internal/faults, build tag faults): kills, pauses and fails over
# agents and Redis under load and counts every job. The measured figures are written to
# bin/faults-<profile>.jsonl; docs/reliability.md holds them.
.PHONY: test-faults test-faults-full
test-faults: ensure-redis ensure-postgres
	@mkdir -p bin && rm -f bin/faults-short.jsonl
	DELAYQ_FAULTS=short DELAYQ_FAULTS_RESULTS=$(CURDIR)/bin/faults-short.jsonl \
		$(GO) test -tags faults -count=1 -timeout 15m -v ./cmd/delayq/internal/faults/
	$(GO) test -tags faults -count=1 -timeout 5m -run '^TestFault' -v ./archive/

test-faults-full: ensure-redis
	@mkdir -p bin && rm -f bin/faults-full.jsonl
	DELAYQ_FAULTS=full DELAYQ_FAULTS_RESULTS=$(CURDIR)/bin/faults-full.jsonl \
		$(GO) test -tags faults -count=1 -timeout 90m -v ./cmd/delayq/internal/faults/

lint:
	@out="$$(gofmt -l .)"; \
	if [ -n "$$out" ]; then \
		echo "gofmt: these files need formatting (run gofmt -w):"; \
		echo "$$out"; \
		exit 1; \
	fi
	$(GO) vet $(PACKAGES)
	$(GO) vet -tags faults ./cmd/delayq/internal/faults/... ./archive/
	$(GO) vet -tags bench ./cmd/delayq/...
	cd cmd/delayq/bench/peers && $(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PACKAGES)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags faults ./cmd/delayq/internal/faults/... ./archive/
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags bench ./cmd/delayq/...

# The OpenAPI document against Redocly CLI's recommended rules (scripts/lint-openapi.sh); needs
# Node.js and npm, which .ci/run installs.
lint-openapi:
	@bash scripts/lint-openapi.sh

bench: ensure-redis
	$(GO) test -run '^$$' -bench . -benchtime 2s $(PACKAGES)

# The dashboard's screenshots in docs/ (shown in the README), taken by a browser test.
screenshots: ensure-redis ensure-chromium
	DELAYQ_SCREENSHOTS=$(CURDIR)/docs $(GO) test -count=1 -run '^TestBrowserScreenshots$$' ./cmd/delayq/internal/dashboard/

# -buildvcs=auto: the revision goes into the binary (delayq version) even where GOFLAGS says
# -buildvcs=false, and a tree outside git builds all the same.
build:
	$(GO) build -buildvcs=auto -o bin/delayq ./cmd/delayq

# Installs delayq into $(GOBIN), or $(GOPATH)/bin when GOBIN is unset.
install:
	$(GO) install -buildvcs=auto ./cmd/delayq

# Builds the Docker image (delayq:dev) and checks that it serves and stops cleanly. Docker needs
# a running daemon: without one that answers (or without access to the base images) it says so
# plainly, builds nothing and succeeds, since CI runs it everywhere.
docker:
	@bash scripts/docker-build.sh

# Runs the server with an embedded redis-server (data in ./delayq-data);
# pass flags with ARGS, e.g. make run ARGS="--listen :8080".
run:
	@GO="$(GO)" bash scripts/run.sh $(ARGS)

# A smoke run of every benchmark scenario at small counts, through a delayq built with -tags bench.
bench-smoke: ensure-redis
	$(GO) run -tags bench ./cmd/delayq bench --quick

# delayq side by side with asynq and BullMQ on one redis-server, 3 runs each; rewrites
# BENCHMARKS.md. Needs Node 20 and npm for BullMQ.
bench-peers: ensure-redis
	cd cmd/delayq/bench/peers && $(GO) run . -runs 3

# Instructions redis-server spends on one enqueue, delayq's against the floor's, counted by
# valgrind's callgrind: figures that do not move with the machine's load.
script-cost: ensure-redis ensure-valgrind
	$(GO) run ./cmd/delayq/bench/scriptcost

.PHONY: ensure-valgrind
ensure-valgrind:
	@command -v callgrind_control >/dev/null || bash scripts/ensure-debian-packages.sh script-cost "install valgrind" valgrind -- valgrind callgrind_control

# The cost guard, which CI runs: what one call on the hot path costs, in measures that do not
# move with the machine's load, against the budgets of internal/budget. The client's
# allocations per Enqueue, Reserve and Ack, and HTTP enqueue (testing.AllocsPerRun, outside the
# race detector), and Redis's instructions per lone enqueue, coalesced enqueue of 16, reserve of
# 16 and ack (callgrind). A change that needs more raises its budget and says why.
.PHONY: check-cost
check-cost: ensure-redis ensure-valgrind
	$(GO) test -count=1 -run '^TestAllocationsPerCall$$' -v . ./cmd/delayq/internal/httpapi/
	$(GO) run ./cmd/delayq/bench/scriptcost -check

# delayq's beanstalkd front end against the real beanstalkd (binlog on), both durable, through
# the same client; prints a markdown report and rewrites its section of BENCHMARKS.md.
.PHONY: bench-beanstalkd
bench-beanstalkd: ensure-redis ensure-beanstalkd
	$(GO) run ./cmd/delayq/bench/beanstalkd -n 20000 -runs 3 -write BENCHMARKS.md
