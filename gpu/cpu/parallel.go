package cpu

import "sync"

// parallelFor splits [0, n) into at most threads contiguous ranges of at least
// grain items and runs fn on each, the first range on the calling goroutine.
// Callers must make every output element depend on one range only, so results
// never depend on how the range was split.
func (be *Backend) parallelFor(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	parts := min(be.threads, (n+grain-1)/grain)
	if parts <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	wg.Add(parts - 1)
	for p := 1; p < parts; p++ {
		lo, hi := p*n/parts, (p+1)*n/parts
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	fn(0, n/parts)
	wg.Wait()
}

// parallelWorkers runs fn(worker, lo, hi) like parallelFor and also passes the
// worker index, so callers can use per-worker scratch memory.
func (be *Backend) parallelWorkers(n int, fn func(worker, lo, hi int)) {
	parts := min(be.threads, n)
	if parts <= 1 {
		if n > 0 {
			fn(0, 0, n)
		}
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

// chunk is the fixed reduction granularity: row reductions (bias and norm weight
// gradients, sums of squares) are summed per chunk and the chunk partials are
// then combined in index order, whatever the thread count.
const chunk = 64
