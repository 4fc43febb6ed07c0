package pipeline

import (
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PoolIdentity is the Temporal identity a GPU worker polls the pool queue
// with: its own queue, its slots, the usual pid@host and a token of this
// process (a restarted container has the same pid and host), so that
// the Workers activity can read the pool's capacity from the server.
func PoolIdentity(queue string, slots int) string {
	host, _ := os.Hostname()
	var tok [4]byte
	rand.Read(tok[:])
	return fmt.Sprintf("%s slots=%d %d@%s %x", queue, max(slots, 1), os.Getpid(), host, tok)
}

// LeftKey is the store key where a worker records that it left the pool.
func LeftKey(queue string) string { return "pool/left/" + queue }

// ParsePoolIdentity reads PoolIdentity's queue and slots.
func ParsePoolIdentity(id string) (queue string, slots int, ok bool) {
	f := strings.Fields(id)
	if len(f) < 2 || !strings.HasPrefix(f[0], GPUPool+"-") {
		return "", 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(f[1], "slots="))
	if err != nil || !strings.HasPrefix(f[1], "slots=") || n < 1 {
		return "", 0, false
	}
	return f[0], n, true
}
