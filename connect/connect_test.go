package connect

import (
	"strings"
	"testing"
)

// TestDialNamesAnUnknownHost: an address whose host does not resolve is
// refused naming the key and the host (gRPC alone says "no children to pick
// from").
func TestDialNamesAnUnknownHost(t *testing.T) {
	for addr, want := range map[string]string{
		"no-such-host.invalid:7233": `temporal.address: cannot resolve host "no-such-host.invalid"`,
		"7233":                      `temporal.address: "7233" is not host:port`,
	} {
		c, err := LoadConnection("", func(string) string { return "" }, map[string]any{"temporal.address": addr})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Dial(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("dial %s: %v, want %q", addr, err, want)
		}
	}
}
