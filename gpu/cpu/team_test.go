package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTeamRunsEveryItemOnce: regions of every size and part count, back
// to back, after the helpers have parked, nested inside a part and from
// several goroutines at once, run each item exactly once on the split
// runParts makes (worker p gets [p*n/parts, (p+1)*n/parts)).
func TestTeamRunsEveryItemOnce(t *testing.T) {
	be := New(4)
	if be.team == nil {
		t.Fatal("a 4-thread backend has no team")
	}
	check := func(n, parts int) {
		t.Helper()
		hits := make([]atomic.Int32, n)
		var wrong atomic.Int32
		be.runParts(n, parts, func(w, lo, hi int) {
			if lo != w*n/parts || hi != (w+1)*n/parts {
				wrong.Add(1)
			}
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
		})
		if wrong.Load() != 0 {
			t.Fatalf("n %d parts %d: a worker got another range than runParts gives it", n, parts)
		}
		for i := range hits {
			if hits[i].Load() != 1 {
				t.Fatalf("n %d parts %d: item %d ran %d times", n, parts, i, hits[i].Load())
			}
		}
	}
	for round := 0; round < 2000; round++ {
		check(1+round%37, 1+round%4)
	}
	time.Sleep(3 * spinFor) // every helper parks
	for parts := 1; parts <= 4; parts++ {
		check(100, parts)
	}
	// A region started inside a part, and regions from other goroutines
	// while one runs, go to plain goroutines.
	var inner atomic.Int32
	be.runParts(4, 4, func(_, lo, hi int) {
		be.runParts(8, 2, func(_, lo, hi int) { inner.Add(int32(hi - lo)) })
	})
	if inner.Load() != 4*8 {
		t.Fatalf("nested regions ran %d items, want 32", inner.Load())
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 300; r++ {
				check(1+r%13, 1+r%4)
			}
		}()
	}
	wg.Wait()
}

// TestTeamStopsWithItsBackend: a backend's helpers end once it is
// collected, so backends made and dropped leave no goroutines behind.
func TestTeamStopsWithItsBackend(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		be := New(3)
		be.runParts(10, 3, func(_, _, _ int) {})
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after dropping 20 backends, %d before", n, before)
	}
}
