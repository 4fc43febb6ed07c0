// Package metrics is corl's Prometheus side: one registry per process that
// holds the Temporal SDK's worker and client metrics (through the SDK's
// tally handler) and corl's own — stage seconds, tokens, FLOPs, reward and
// pass@1 per member, activity retries and member placements — served over
// HTTP for a scrape.
package metrics
