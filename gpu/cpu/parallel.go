package cpu

import (
	"runtime"
	"sync"
)

// parallelFor splits [0, n) into at most threads contiguous ranges of at least
// grain items and runs fn on each, the first range on the calling goroutine.
// Callers must make every output element depend on one range only, so results
// never depend on how the range was split.
func (be *Backend) parallelFor(n, grain int, fn func(lo, hi int)) {
	grain = max(grain, 1)
	be.runParts(n, min(be.threads, (n+grain-1)/grain), func(_, lo, hi int) { fn(lo, hi) })
}

// parallelWorkers runs fn(worker, lo, hi) like parallelFor (grain 1) and
// also passes the worker index, so callers can use per-worker scratch memory.
func (be *Backend) parallelWorkers(n int, fn func(worker, lo, hi int)) {
	be.runParts(n, min(be.threads, n), fn)
}

// runParts is runParts on the backend's team, when it has one.
func (be *Backend) runParts(n, parts int, fn func(worker, lo, hi int)) {
	if be.team == nil || n <= 0 || parts <= 1 {
		runParts(n, parts, fn)
		return
	}
	be.team.run(n, parts, fn)
	// The finalizer that stops the helpers must not run during a region:
	// be stays reachable until its region ends.
	runtime.KeepAlive(be)
}

// runParts splits [0, n) into parts contiguous ranges and runs them on
// parts goroutines (the first on the caller's), waiting for all.
func runParts(n, parts int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	if parts <= 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	wg.Add(parts - 1)
	for p := 1; p < parts; p++ {
		lo, hi := p*n/parts, (p+1)*n/parts
		go func() {
			defer wg.Done()
			fn(p, lo, hi)
		}()
	}
	fn(0, 0, n/parts)
	wg.Wait()
}
