# corl's build and test entry points. `make test` is what CI runs.
GO ?= go
PKGS := ./...

.PHONY: test test-long build bench fmt vet

build:
	$(GO) build -o bin/corl ./cmd/corl

# The default test run: vet, formatting, every package's tests, and the
# portable (non-assembly) kernels through the same conformance suite.
test: vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) test -count=1 -timeout 20m $(PKGS)
	$(GO) test -count=1 -tags purego ./gpu/... ./model/...

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

# Benchmarks at small sizes; `corl bench train` runs any size.
bench:
	$(GO) test -run XXX -bench . -benchtime 20x ./gpu/cpu ./model
