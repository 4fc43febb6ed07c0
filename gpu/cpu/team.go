package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// team is a backend's helper goroutines, kept between parallel regions.
// A decoding step is hundreds of operations of a few microseconds each;
// starting goroutines per operation leaves the other cores' OS threads
// parked between operations, and waking one (a futex, on a VM an
// interrupt to a halted vCPU) can cost as much as the operation. A helper
// instead spins for a while after its part, watching for the next region,
// and parks only when none comes (spinFor). The split of [0, n) into parts
// is runParts', so results are bitwise those of any other thread count.
type team struct {
	mu      sync.Mutex             // one region at a time; a concurrent or nested caller runs runParts
	region  atomic.Pointer[region] // the latest region, immutable once published
	pending atomic.Int32           // its helpers still running their part
	helpers []*helper
	quit    chan struct{}
}

// region is one parallel region: fn over [0, n) in parts.
type region struct {
	gen   uint64
	fn    func(worker, lo, hi int)
	n     int
	parts int
}

type helper struct {
	sleeping atomic.Bool
	wake     chan struct{} // one token per CAS of sleeping true -> false by the caller
}

// spinFor is how long a helper watches for the next region before it
// parks: longer than the gaps between a step's operations, short enough
// that an idle backend stops using the cores within a fraction of a
// millisecond.
const spinFor = 200 * time.Microsecond

func newTeam(threads int) *team {
	t := &team{quit: make(chan struct{})}
	t.region.Store(&region{})
	for i := 1; i < threads; i++ {
		h := &helper{wake: make(chan struct{}, 1)}
		t.helpers = append(t.helpers, h)
		go t.loop(i, h)
	}
	return t
}

// close stops the helpers (when their backend is collected).
func (t *team) close() { close(t.quit) }

// run is runParts(n, parts, fn) on the team: part 0 on the caller, part p
// on helper p.
func (t *team) run(n, parts int, fn func(worker, lo, hi int)) {
	if parts > len(t.helpers)+1 || !t.mu.TryLock() {
		runParts(n, parts, fn)
		return
	}
	defer t.mu.Unlock()
	last := t.region.Load()
	t.pending.Store(int32(parts - 1))
	t.region.Store(&region{gen: last.gen + 1, fn: fn, n: n, parts: parts})
	for _, h := range t.helpers[:parts-1] {
		if h.sleeping.CompareAndSwap(true, false) {
			h.wake <- struct{}{}
		}
	}
	fn(0, 0, n/parts)
	for spins := 0; t.pending.Load() != 0; spins++ {
		if spins%64 == 63 {
			runtime.Gosched()
		}
	}
	// Hold nothing of the region between regions.
	t.region.Store(&region{gen: last.gen + 1})
}

// loop is helper i's life: run its part of each region, spin, park. A
// helper outside a region's parts skips it (the caller does not wait for
// it); one inside always sees it, as the next region waits for its part.
func (t *team) loop(i int, h *helper) {
	var seen uint64 // the blank region newTeam publishes: a helper that starts late still runs the first region
	for {
		r := t.await(h, seen)
		if r == nil {
			return
		}
		seen = r.gen
		if i < r.parts && r.fn != nil {
			r.fn(i, i*r.n/r.parts, (i+1)*r.n/r.parts)
			t.pending.Add(-1)
		}
	}
}

// await returns the first region after seen once it is published, or nil
// when the team closes: spinning first, then parked.
func (t *team) await(h *helper, seen uint64) *region {
	start := time.Now()
	for spins := 0; ; spins++ {
		if r := t.region.Load(); r.gen != seen {
			return r
		}
		if spins%64 != 63 {
			continue
		}
		runtime.Gosched()
		if time.Since(start) < spinFor {
			continue
		}
		// Park. The caller wakes a helper only by taking its sleeping
		// flag (true -> false) and then sending one token; a helper that
		// finds the flag already taken must receive that token.
		h.sleeping.Store(true)
		if r := t.region.Load(); r.gen != seen {
			if !h.sleeping.CompareAndSwap(true, false) {
				<-h.wake
			}
			return r
		}
		select {
		case <-h.wake:
		case <-t.quit:
			return nil
		}
		start = time.Now()
	}
}
