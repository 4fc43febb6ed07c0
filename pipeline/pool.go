package pipeline

import (
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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

// PollerMemory bounds how long a GPU worker killed without a clean stop
// (SIGKILL, a lost machine) stays in the pool's listing: pollers not seen
// for longer are left out. A live worker polls again at least every minute
// (the server's long poll), so twice that never drops one.
const PollerMemory = 2 * time.Minute

// AliveEvery is how often a GPU worker records in the store that it is
// alive (AliveKey), and AliveFor how long after its last record the pool's
// listing still counts it: a worker killed idle (SIGKILL, a lost machine)
// leaves the listing within AliveFor, not the server's PollerMemory. A
// worker that cannot write the store is counted as the server lists it.
// (The listing compares the record's time with its own clock: the
// machines' clocks must agree to well within AliveFor - AliveEvery.)
const (
	AliveEvery = 10 * time.Second
	AliveFor   = 35 * time.Second
)

// AliveKey is the store key of a GPU worker's record that it is alive.
func AliveKey(queue string) string { return "pool/alive/" + queue }

// Alive is a GPU worker's record that it is alive: the identity it polls
// the pool with, and when it wrote the record.
type Alive struct {
	Identity string    `json:"identity"`
	At       time.Time `json:"at"`
}

// LeftKey is the store key where a worker records that it left the pool.
func LeftKey(queue string) string { return "pool/left/" + queue }

// HoldingKey is the store key where a GPU worker records the members it
// holds, each time that changes: what `corl status` shows of the pool.
func HoldingKey(queue string) string { return "pool/holding/" + queue }

// Holding is what a GPU worker holds: its members (of every run) and its
// slots. A worker holding more members than slots takes no new member
// within its slots.
type Holding struct {
	Queue   string       `json:"queue"`
	Slots   int          `json:"slots"`
	Members []HeldMember `json:"members"`
	At      time.Time    `json:"at"` // when it last changed
}

// HeldMember is one member a worker holds.
type HeldMember struct {
	Run    string `json:"run"` // the run's key (its workflow ID)
	Member string `json:"member"`
}

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
