# delayq developer targets. `make test` is the test command: it installs
# Redis first if needed (the tests start real redis-server processes).

GO ?= go

.PHONY: all test test-short lint bench build run ensure-redis

all: lint test

ensure-redis:
	@bash scripts/ensure-redis.sh

test: ensure-redis
	$(GO) test -race -count=1 -timeout 15m ./...

test-short: ensure-redis
	$(GO) test -race -count=1 -timeout 15m -short ./...

lint:
	@out="$$(gofmt -l .)"; \
	if [ -n "$$out" ]; then \
		echo "gofmt: these files need formatting (run gofmt -w):"; \
		echo "$$out"; \
		exit 1; \
	fi
	$(GO) vet ./...

bench: ensure-redis
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

build:
	$(GO) build -o bin/delayq ./cmd/delayq

# Runs the server with an embedded redis-server (data in ./delayq-data);
# pass flags with ARGS, e.g. make run ARGS="--listen :8080".
run:
	bash scripts/ensure-redis.sh && $(GO) run ./cmd/delayq server $(ARGS)
