# attune — the commands a newcomer needs are `make run` and `make test`.

GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
HTMX    := 2.0.11


.PHONY: run test test-ha build generate lint check-generated bench vendor screenshots

## run: serve attune on http://127.0.0.1:8080 against the local PostgreSQL
## (on an empty database it also sets up a demo)
run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/attune serve --demo --dev-dir .attune

## test: lint, then every test (needs PostgreSQL; browser tests need Chromium)
test: lint
	$(GO) test -race -shuffle=on -count=1 -timeout 12m ./...

## test-ha: the failover test alone (a primary killed under load, its
## standby promoted); make test runs it too
test-ha:
	$(GO) test -race -count=1 -run TestFailoverLosesNoAcknowledgedLabel -v ./cmd/attune

## build: the attune binary in bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/attune ./cmd/attune

## generate: regenerate the templ components' Go code
generate:
	$(GO) tool templ generate

## lint: go vet, gofmt, and a check that generated templ code is current
lint: check-generated
	$(GO) vet ./...
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Regenerates into a scratch copy and compares, so a stale *_templ.go fails
# the build without touching the working tree.
check-generated:
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cp -r web go.mod go.sum "$$tmp/" && $(GO) build -o "$$tmp/templ" github.com/a-h/templ/cmd/templ && \
	(cd "$$tmp" && ./templ generate >/dev/null 2>&1) && \
	diff -r web "$$tmp/web" >/dev/null || { echo "generated templ code is stale: run 'make generate' and commit the result"; exit 1; }

## bench: every benchmark, with memory figures
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## screenshots: retake the documentation's screenshots (docs/img) from the pages as they are
screenshots:
	$(GO) test -count=1 -run 'TestBrowserScreenshots|TestDocScreenshots' ./web -update-docs

## vendor: fetch htmx from the npm registry into static/js
vendor:
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	(cd "$$tmp" && npm pack --silent htmx.org@$(HTMX) >/dev/null && tar xzf htmx.org-$(HTMX).tgz) && \
	cp "$$tmp/package/dist/htmx.min.js" static/js/htmx.min.js
