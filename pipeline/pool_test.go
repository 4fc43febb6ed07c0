package pipeline

import "testing"

// A pool identity reads back as its queue and slots; other identities do
// not read as one.
func TestPoolIdentity(t *testing.T) {
	q, n, ok := ParsePoolIdentity(PoolIdentity("corl-gpu-w1", 3))
	if !ok || q != "corl-gpu-w1" || n != 3 {
		t.Errorf("round trip: %q %d %v", q, n, ok)
	}
	for _, id := range []string{"", "1234@host@", "corl-gpu-w1", "corl-gpu-w1 slots=x 1@h", "corl-gpu-w1 slots=0 1@h", "other slots=2 1@h"} {
		if _, _, ok := ParsePoolIdentity(id); ok {
			t.Errorf("%q parsed as a pool identity", id)
		}
	}
}
