package cohort

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/spec"
)

// sized is the CPU backend reporting a memory of its own.
type sized struct {
	*cpu.Backend
	free, total int64
}

func (s sized) Memory() (int64, int64, error) { return s.free, s.total, nil }

func memorySpec(t *testing.T) (*spec.RunSpec, *Data) {
	t.Helper()
	s := spec.Default()
	s.Data.Tasks, s.Data.RLSize, s.Data.MaxLevel = []string{"arith"}, 32, 1
	base := filepath.Join("..", "examples", "bases", "llama-small")
	s.Members = []spec.Member{{Name: "a", Base: base}, {Name: "b", Base: base, View: 1}}
	d, err := LoadData(&s)
	if err != nil {
		t.Fatal(err)
	}
	return &s, d
}

// TestCheckMemory: each member's plan is printed; a cohort past the free
// memory is refused naming its largest member and what to change, and a
// member past the whole device by CheckMemberFits.
func TestCheckMemory(t *testing.T) {
	s, d := memorySpec(t)
	be := cpu.New(1)
	cfg, rows, err := PlanMember(be, s, s.Members[0], s.Members[0].Base, d)
	if err != nil {
		t.Fatal(err)
	}
	one := model.PlanBytes(rows)
	if want := 16 * int64(cfg.NumParams()); rows[0].Bytes+rows[1].Bytes+rows[2].Bytes != want {
		t.Errorf("state %d bytes, want 16 per parameter = %d", rows[0].Bytes+rows[1].Bytes+rows[2].Bytes, want)
	}
	var log bytes.Buffer
	if err := CheckMemory(sized{be, 3 * one, 4 * one}, s, d, "", &log); err != nil {
		t.Fatalf("two members in the room of three: %v", err)
	}
	if n := strings.Count(log.String(), "memory plan: "); n != 3 {
		t.Errorf("%d plan lines, want one per member and the total:\n%s", n, log.String())
	}
	err = CheckMemory(sized{be, one + one/2, 4 * one}, s, d, "", &log)
	if err == nil || !strings.Contains(err.Error(), "the largest member is") || !strings.Contains(err.Error(), "micro_batch_size") {
		t.Errorf("two members in the room of one and a half: err = %v", err)
	}
	if err := CheckMemory(sized{be, one / 2, 4 * one}, s, d, "", &log); err == nil || !strings.Contains(err.Error(), "leave no room") {
		t.Errorf("two members in the room of half of one: err = %v", err)
	}
	if err := CheckMemberFits(sized{be, 0, one - 1}, "a", rows); err == nil || !strings.Contains(err.Error(), "member a does not fit") {
		t.Errorf("a member past the device: err = %v", err)
	}
	if err := CheckMemberFits(sized{be, 0, one}, "a", rows); err != nil {
		t.Errorf("a member that fits exactly: %v", err)
	}
}
