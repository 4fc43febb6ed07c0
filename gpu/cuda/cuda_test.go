package cuda

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/corl-project/corl/gpu/cuda/kernelsrc"
	"github.com/corl-project/corl/gpu/gputest"
)

// TestConformance runs the whole suite on the device; without one it skips,
// saying why.
func TestConformance(t *testing.T) {
	be, err := New()
	if errors.Is(err, ErrNoDevice) {
		t.Skipf("CUDA conformance suite skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device: %s", be.Name())
	gputest.RunAll(t, be)
}

// TestNoDeviceIsAnError: on a machine without a usable device New fails
// cleanly with ErrNoDevice and says why (no driver library, a library
// without the API, cuInit's reason, no devices, or too old a device), never
// a panic and never a bare "no CUDA device".
func TestNoDeviceIsAnError(t *testing.T) {
	_, err := New()
	if err == nil {
		t.Skip("a CUDA device is present: nothing to refuse")
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("New failed with %v; want it to wrap ErrNoDevice", err)
	}
	reasons := regexp.MustCompile(`cannot open libcuda\.so\.1 \(.+\)|libcuda\.so\.1 lacks cu\w+|cuInit: \S.*|reports \d+ devices|compute capability \d+\.\d+`)
	if !reasons.MatchString(err.Error()) {
		t.Fatalf("New failed with %q: the error does not say why there is no device", err)
	}
	t.Logf("no device, as expected here: %v", err)
}

// TestPTXIsFresh: the committed PTX was generated from the current kernel
// sources (go generate ./gpu/cuda rewrites it), and it defines every kernel
// the backend loads.
func TestPTXIsFresh(t *testing.T) {
	sum, err := kernelsrc.Hash("kernels")
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`\.entry\s+([A-Za-z_0-9]+)`)
	for name, ptx := range map[string]string{"kernels_compute80.ptx": ptx80, "kernels_compute90.ptx": ptx90} {
		if !strings.Contains(strings.SplitN(ptx, "\n", 3)[1], kernelsrc.HashPrefix+sum) {
			t.Errorf("%s is stale: regenerate with `go generate ./gpu/cuda` (needs nvcc)", name)
		}
		have := map[string]bool{}
		for _, m := range entry.FindAllStringSubmatch(ptx, -1) {
			have[m[1]] = true
		}
		for _, k := range kernelNames {
			if !have[k] {
				t.Errorf("%s has no kernel %s", name, k)
			}
		}
	}
	if _, err := os.Stat("kernels/all.cu"); err != nil {
		t.Fatal(err)
	}
}

// TestGroups checks the host-side grouping behind the atomic-free embedding
// backward.
func TestGroups(t *testing.T) {
	order, starts, keys := groups([]int32{3, 1, 3, 0, 1, 3})
	want := [][]int32{{3, 1, 4, 0, 2, 5}, {0, 1, 3, 6}, {0, 1, 3}}
	for i, got := range [][]int32{order, starts, keys} {
		if len(got) != len(want[i]) {
			t.Fatalf("groups: %v %v %v", order, starts, keys)
		}
		for j := range got {
			if got[j] != want[i][j] {
				t.Fatalf("groups: %v %v %v, want %v", order, starts, keys, want)
			}
		}
	}
}
