package activities

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/checker"
	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/metrics"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/train"
)

// Activities carries what the activities need. One value serves one worker
// process; Queue is that process's own task queue.
type Activities struct {
	Store   blob.Store
	Backend gpu.Backend
	Queue   string
	// Metrics records corl's Prometheus metrics; nil: off.
	Metrics *metrics.Corl
	// Client reads other workflows' results (RunResult) and the pool's
	// pollers (Workers).
	Client client.Client
	// Slots is how many members this worker takes before a placement looks
	// elsewhere (0: one).
	Slots int

	mu     sync.Mutex // one compute activity at a time: the backend is a single stream
	held   map[string]*held
	dataMu sync.Mutex
	data   map[string]*train.Data
}

// held is a member this worker holds.
type held struct {
	run      string
	workflow string // the run's workflow ID ("": a caller without one, never reclaimed)
	member   *rl.Member
	round    int                           // rounds whose updates the weights contain
	stats    map[int]pipeline.UpdateOutput // update results by round, for idempotent retries
}

// New returns activities for a worker.
func New(store blob.Store, be gpu.Backend, queue string) *Activities {
	return &Activities{Store: store, Backend: be, Queue: queue, held: map[string]*held{}, data: map[string]*train.Data{}}
}

func heldKey(run, member string) string { return run + "\x00" + member }

func notHere(ref pipeline.MemberRef, why string) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("member %s of run %s at round %d: %s", ref.Spec.Members[ref.Member].Name, ref.RunKey(), ref.Round, why),
		pipeline.ErrMemberNotHere, nil)
}

func badSpec(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrBadSpec, err)
}

// classify turns compute errors into non-retryable ones where retrying with
// the same inputs cannot help.
func classify(err error, name string, round int) error {
	if errors.Is(err, model.ErrNonFinite) || strings.Contains(err.Error(), "GRPO loss is") {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("model %s, round %d: %v", name, round, err), pipeline.ErrNonFinite, err)
	}
	return err
}

// runData validates the spec and returns its prompts and evaluation set,
// cached per data description (not per run name: two specs under one name
// with other data must not share prompts).
func (a *Activities) runData(s *spec.RunSpec) (*train.Data, error) {
	if err := config.Validate(s); err != nil {
		return nil, badSpec(err)
	}
	k, _ := json.Marshal(struct {
		D     spec.Data
		E     int
		Split string
	}{s.Data, s.Eval.Size, s.Eval.Split})
	a.dataMu.Lock()
	defer a.dataMu.Unlock()
	if d, ok := a.data[string(k)]; ok {
		return d, nil
	}
	d, err := train.LoadData(s)
	if err != nil {
		return nil, badSpec(err)
	}
	a.data[string(k)] = d
	return d, nil
}

// member returns the held member at exactly round ref.Round.
func (a *Activities) member(ref pipeline.MemberRef) (*held, error) {
	h, ok := a.held[heldKey(ref.RunKey(), ref.Spec.Members[ref.Member].Name)]
	if !ok {
		return nil, notHere(ref, "not held by worker "+a.Queue)
	}
	if h.round != ref.Round {
		return nil, notHere(ref, fmt.Sprintf("worker %s holds it at round %d", a.Queue, h.round))
	}
	return h, nil
}

// exclusive heartbeats what (from now on, so an activity queued behind
// another member's on this worker's single device does not look dead) and
// takes the device; the returned func releases both.
func (a *Activities) exclusive(ctx context.Context, what string) (release func()) {
	stop := heartbeat(ctx, func() any { return what })
	a.mu.Lock()
	return func() {
		a.mu.Unlock()
		stop()
	}
}

func memberName(ref pipeline.MemberRef) string { return ref.Spec.Members[ref.Member].Name }

// heartbeat records progress from a goroutine until stop is called, so long
// computations stay visible to the heartbeat timeout.
func heartbeat(ctx context.Context, detail func() any) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, detail())
			}
		}
	}()
	activity.RecordHeartbeat(ctx, detail())
	return func() { close(done) }
}

// RunResult returns the result of the workflow with ID id (a sweep's cell
// that an earlier run of the sweep completed), as JSON.
func (a *Activities) RunResult(ctx context.Context, id string) (json.RawMessage, error) {
	defer heartbeat(ctx, func() any { return "result of " + id })()
	if a.Client == nil {
		return nil, errors.New("run result: this worker has no Temporal client")
	}
	var res json.RawMessage
	if err := a.Client.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return res, nil
}

// namedAs rewrites an error about the model directory dir to name it source
// (the user's directory, not a temporary copy of it).
func namedAs(err error, dir, source string) error {
	if dir == source {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), dir, source))
}

// ValidateSpec checks a run spec (config.Validate). The workflow runs it as
// its first step, a local activity, so that a bad spec (a JSON spec from the
// Temporal CLI included) fails the run at once with every bad key listed.
// A function, not a method: every method of Activities is registered as a
// regular activity.
func ValidateSpec(_ context.Context, s spec.RunSpec) error {
	if err := config.Validate(&s); err != nil {
		return badSpec(fmt.Errorf("run spec: %w", err))
	}
	return nil
}

// Acquire loads a member on this worker and returns this worker's queue. It
// starts from the newest complete checkpoint at or after the recorded one
// (a worker that got a stop notice may have written a newer one), else the
// recorded checkpoint, else the base.
func (a *Activities) Acquire(ctx context.Context, in pipeline.AcquireInput) (pipeline.AcquireOutput, error) {
	defer a.exclusive(ctx, fmt.Sprintf("acquire %s at round %d", memberName(in.MemberRef), in.Round))()
	// Members of runs that ended where no Release reached this worker (a
	// terminated or timed-out run, a release lost with the network) are
	// not load and not memory to keep.
	a.reclaimClosed(ctx)
	s := &in.Spec
	if in.WithinSlots {
		if others := a.heldOtherThan(heldKey(in.RunKey(), s.Members[in.Member].Name)); others >= max(a.Slots, 1) {
			return pipeline.AcquireOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("worker %s holds %d members in %d slots", a.Queue, others, max(a.Slots, 1)), pipeline.ErrWorkerFull, nil)
		}
	}
	if _, err := a.runData(s); err != nil {
		return pipeline.AcquireOutput{}, err
	}
	ms := s.Members[in.Member]
	key, round := in.CheckpointKey, in.CheckpointRound
	for r := in.Round; r > in.CheckpointRound; r-- {
		k := blob.ManifestKey(blob.CheckpointPrefix(in.RunKey(), r, ms.Name))
		if _, err := a.Store.Get(ctx, k); err == nil {
			key, round = k, r
			break
		}
	}
	var dir, source, note string
	for dir == "" {
		if key == "" {
			base, src, cleanup, err := blob.Materialize(ctx, a.Store, ms.Base)
			if err != nil {
				return pipeline.AcquireOutput{}, badSpec(fmt.Errorf("member %s: base %s: %w", ms.Name, ms.Base, err))
			}
			defer cleanup()
			dir, source, round = base, src, 0
			break
		}
		tmp, src, cleanup, err := blob.Materialize(ctx, a.Store, blob.BlobRef+key)
		if errors.Is(err, blob.ErrCorrupt) {
			// Reading it again cannot help: restore the newest older
			// checkpoint (or the base) and let the workflow replay from there.
			bad := key
			key, round = a.olderCheckpoint(ctx, in.RunKey(), ms.Name, round)
			note = fmt.Sprintf("member %s: %v; restored %s instead", ms.Name, err, cmp.Or(key, "the base"))
			activity.GetLogger(ctx).Warn("corrupt checkpoint", "key", bad, "error", err, "fallback", key)
			continue
		}
		if err != nil {
			return pipeline.AcquireOutput{}, err
		}
		defer cleanup()
		dir, source = tmp, src
	}
	m, err := train.LoadMember(a.Backend, ms, dir, false)
	if err != nil {
		return pipeline.AcquireOutput{}, badSpec(namedAs(err, dir, source))
	}
	for _, w := range m.Model.Warnings {
		note = strings.TrimPrefix(note+"; ", "; ") + fmt.Sprintf("member %s: %v", ms.Name, namedAs(errors.New(w), dir, source))
	}
	if s.GRPO.Beta > 0 { // the KL reference is always the base
		base, src, cleanup, err := blob.Materialize(ctx, a.Store, ms.Base)
		if err != nil {
			return pipeline.AcquireOutput{}, badSpec(err)
		}
		defer cleanup()
		if m.Ref, err = model.LoadHF(a.Backend, base); err != nil {
			return pipeline.AcquireOutput{}, badSpec(namedAs(err, base, src))
		}
	}
	a.held[heldKey(in.RunKey(), ms.Name)] = &held{run: in.RunKey(), workflow: in.Run, member: m, round: round, stats: map[int]pipeline.UpdateOutput{}}
	a.Metrics.Holding(len(a.held))
	activity.GetLogger(ctx).Info("acquired member", "run", in.RunKey(), "member", ms.Name, "round", round, "from", key)
	a.Metrics.Placed(in.RunKey(), ms.Name)
	return pipeline.AcquireOutput{Queue: a.Queue, Round: round, CheckpointKey: key, Note: note}, nil
}

// heldOtherThan counts the members held under keys other than key.
func (a *Activities) heldOtherThan(key string) int {
	n := 0
	for k := range a.held {
		if k != key {
			n++
		}
	}
	return n
}

// Workers lists the live GPU workers of the pool, from the pool queue's
// pollers (a worker's identity names its own queue and slots, see
// PoolIdentity), sorted by queue. Pollers not seen for two minutes are
// left out, and so are workers that recorded leaving the pool (Leave). Without a client, or on a server that does not answer, the
// list is empty and the workflow places through the pool queue.
func (a *Activities) Workers(ctx context.Context) ([]pipeline.WorkerInfo, error) {
	if a.Client == nil {
		return nil, nil
	}
	resp, err := a.Client.DescribeTaskQueue(ctx, pipeline.GPUPool, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", pipeline.GPUPool, err)
	}
	slots := map[string]int{}
	for _, p := range resp.GetPollers() {
		if t := p.GetLastAccessTime(); t != nil && time.Since(t.AsTime()) > 2*time.Minute {
			continue
		}
		q, n, ok := ParsePoolIdentity(p.GetIdentity())
		if !ok {
			continue
		}
		if a.Store != nil {
			if b, err := a.Store.Get(ctx, leftKey(q)); err == nil && string(b) == p.GetIdentity() {
				continue
			}
		}
		slots[q] = max(slots[q], n)
	}
	out := make([]pipeline.WorkerInfo, 0, len(slots))
	for q, n := range slots {
		out = append(out, pipeline.WorkerInfo{Queue: q, Slots: n})
	}
	slices.SortFunc(out, func(x, y pipeline.WorkerInfo) int { return strings.Compare(x.Queue, y.Queue) })
	return out, nil
}

// PoolIdentity is the Temporal identity a GPU worker polls the pool queue
// with: its own queue, its slots, the usual pid@host and a token of this
// process (a restarted container has the same pid and host), so that
// Workers can read the pool's capacity from the server.
func PoolIdentity(queue string, slots int) string {
	host, _ := os.Hostname()
	var tok [4]byte
	rand.Read(tok[:])
	return fmt.Sprintf("%s slots=%d %d@%s %x", queue, max(slots, 1), os.Getpid(), host, tok)
}

// leftKey is where a worker records that it left the pool.
func leftKey(queue string) string { return "pool/left/" + queue }

// Leave records in the store that the worker polling the pool with identity
// has stopped, so that Workers leaves it out at once. The server keeps a
// poller listed for a while after its last poll; a clean shutdown should
// not look like a live worker. (A function: see ReclaimClosed.)
func Leave(ctx context.Context, a *Activities, identity string) error {
	if a.Store == nil {
		return nil
	}
	return a.Store.Put(ctx, leftKey(a.Queue), []byte(identity))
}

// ParsePoolIdentity reads PoolIdentity's queue and slots.
func ParsePoolIdentity(id string) (queue string, slots int, ok bool) {
	f := strings.Fields(id)
	if len(f) < 2 || !strings.HasPrefix(f[0], pipeline.GPUPool+"-") {
		return "", 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(f[1], "slots="))
	if err != nil || !strings.HasPrefix(f[1], "slots=") || n < 1 {
		return "", 0, false
	}
	return f[0], n, true
}

// olderCheckpoint is the manifest key and round of the member's newest
// checkpoint before round ("", 0: none, the base).
func (a *Activities) olderCheckpoint(ctx context.Context, run, member string, round int) (string, int) {
	for r := round - 1; r >= 1; r-- {
		k := blob.ManifestKey(blob.CheckpointPrefix(run, r, member))
		if _, err := a.Store.Get(ctx, k); err == nil {
			return k, r
		}
	}
	return "", 0
}

// Generate samples the member's completions for the round's prompts and
// stores them (with the intrinsic signals the reward may need).
func (a *Activities) Generate(ctx context.Context, ref pipeline.MemberRef) (pipeline.GenerateOutput, error) {
	defer a.exclusive(ctx, fmt.Sprintf("round %d generate %s", ref.Round, memberName(ref)))()
	h, err := a.member(ref)
	if err != nil {
		return pipeline.GenerateOutput{}, err
	}
	d, err := a.runData(&ref.Spec)
	if err != nil {
		return pipeline.GenerateOutput{}, err
	}
	start := time.Now()
	c := rl.ConfigFromSpec(&ref.Spec)
	prompts := train.PromptsForRound(d.RL, ref.Spec.Seed, ref.Round, ref.Spec.PromptsPerRound)
	ro, err := rl.Generate(h.member, ref.Member, prompts, c, ref.Round)
	if errors.Is(err, model.ErrCacheType) {
		// Retrying on this worker cannot help: the spec asks for a cache
		// its backend or the model cannot hold.
		return pipeline.GenerateOutput{}, badSpec(fmt.Errorf("generation.kv_cache: %w", err))
	}
	if err != nil {
		return pipeline.GenerateOutput{}, err
	}
	groups := ro.Groups()
	out := pipeline.GenerateOutput{Key: blob.RolloutKey(h.run, ref.Round, h.member.Name)}
	if c.Reward == rl.SelfCertainty || c.Reward == rl.Entropy {
		if out.JudgeFLOPs, err = rl.SelfSignals(h.member, ro, groups, c.MicroBatch, rl.SamplingTemp(c)); err != nil {
			return pipeline.GenerateOutput{}, err
		}
	}
	out.Tokens, out.FLOPs = ro.Cost(h.member.Model)
	parsed, n := 0, 0
	for _, row := range ro {
		for _, cp := range row {
			n++
			if cp.Answer != "" {
				parsed++
			}
		}
	}
	if n > 0 {
		out.ParseRate = float64(parsed) / float64(n)
	}
	b, err := json.Marshal(rolloutBlob{Member: h.member.Name, Round: ref.Round, Rollout: ro, Groups: groups})
	if err != nil {
		return pipeline.GenerateOutput{}, err
	}
	if err := a.Store.Put(ctx, out.Key, b); err != nil {
		return pipeline.GenerateOutput{}, err
	}
	out.Seconds = time.Since(start).Seconds()
	a.Metrics.Stage(h.run, h.member.Name, "generate", out.Seconds, activity.GetInfo(ctx).Attempt)
	a.Metrics.Work(h.run, h.member.Name, "generate", "generated", out.Tokens, out.FLOPs)
	return out, nil
}

func (a *Activities) loadRollout(ctx context.Context, key string) (*rolloutBlob, error) {
	b, err := a.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	var rb rolloutBlob
	if err := json.Unmarshal(b, &rb); err != nil {
		return nil, fmt.Errorf("rollout %s: %w", a.Store.URI(key), err)
	}
	return &rb, nil
}

// Judge has the (judge) member score another member's completions.
func (a *Activities) Judge(ctx context.Context, in pipeline.JudgeInput) (string, error) {
	defer a.exclusive(ctx, fmt.Sprintf("round %d judge by %s", in.Round, memberName(in.MemberRef)))()
	h, err := a.member(in.MemberRef)
	if err != nil {
		return "", err
	}
	d, err := a.runData(&in.Spec)
	if err != nil {
		return "", err
	}
	rb, err := a.loadRollout(ctx, in.Key)
	if err != nil {
		return "", err
	}
	prompts := train.PromptsForRound(d.RL, in.Spec.Seed, in.Round, in.Spec.PromptsPerRound)
	scores, flops, err := rl.JudgeScores(h.member, prompts, rb.Rollout, in.Spec.MicroBatchSize)
	if err != nil {
		return "", err
	}
	a.Metrics.Work(h.run, h.member.Name, "judge", "judged", 0, flops)
	key := blob.JudgeKey(h.run, in.Round, in.Spec.Members[in.Target].Name)
	b, _ := json.Marshal(scores)
	return key, a.Store.Put(ctx, key, b)
}

// Grade computes rewards and advantages for every member and the round's
// diagnostics. It needs no model: it runs on the CPU pool.
func (a *Activities) Grade(ctx context.Context, in pipeline.GradeInput) (pipeline.GradeOutput, error) {
	// Heartbeat so that a grading worker that dies is noticed within the
	// heartbeat timeout, not the (long) start-to-close one.
	defer heartbeat(ctx, func() any { return fmt.Sprintf("round %d grade", in.Round) })()
	start := time.Now()
	s := &in.Spec
	d, err := a.runData(s)
	if err != nil {
		return pipeline.GradeOutput{}, err
	}
	prompts := train.PromptsForRound(d.RL, s.Seed, in.Round, s.PromptsPerRound)
	groups := make([][]rl.Group, len(in.Rollouts))
	rollouts := make([]rl.Rollout, len(in.Rollouts))
	for i, key := range in.Rollouts {
		rb, err := a.loadRollout(ctx, key)
		if err != nil {
			return pipeline.GradeOutput{}, err
		}
		groups[i], rollouts[i] = rb.Groups, rb.Rollout
		if i < len(in.JudgeKeys) && in.JudgeKeys[i] != "" {
			b, err := a.Store.Get(ctx, in.JudgeKeys[i])
			if err != nil {
				return pipeline.GradeOutput{}, err
			}
			var scores [][]float64
			if err := json.Unmarshal(b, &scores); err != nil {
				return pipeline.GradeOutput{}, err
			}
			if err := rl.SetJudgeScores(groups[i], scores); err != nil {
				return pipeline.GradeOutput{}, err
			}
		}
	}
	c := rl.ConfigFromSpec(s)
	if c.Checker != nil {
		views := make([]int, len(s.Members))
		for i, m := range s.Members {
			views[i] = m.View
		}
		run := func(ctx context.Context, items []checker.Item) ([]checker.Verdict, error) {
			return a.check(ctx, *c.Checker, blob.CheckKey(in.RunKey(), in.Round, checker.Key(*c.Checker, items)), items)
		}
		prompts = slices.Clone(prompts)
		if err := rl.Check(ctx, run, prompts, views, rollouts, groups, c.Reward == rl.GroundTruthRL); err != nil {
			if errors.Is(err, checker.ErrTimeout) || ctx.Err() != nil {
				return pipeline.GradeOutput{}, err
			}
			// A checker that crashed or answered garbage does so again.
			return pipeline.GradeOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrChecker, err)
		}
	}
	graded, err := rl.Grade(c, prompts, groups)
	var bad *rl.RewardError
	if errors.As(err, &bad) {
		return pipeline.GradeOutput{}, badSpec(err)
	}
	if err != nil {
		return pipeline.GradeOutput{}, err
	}
	gb := gradeBlob{Round: in.Round, Diag: graded.Diag, Advantages: graded.Advantages}
	key := blob.GradeKey(in.RunKey(), in.Round)
	b, _ := json.Marshal(gb)
	if err := a.Store.Put(ctx, key, b); err != nil {
		return pipeline.GradeOutput{}, err
	}
	secs := time.Since(start).Seconds()
	run := in.RunKey()
	for i, md := range gb.Diag.Models {
		a.Metrics.Round(run, s.Members[i].Name, md.RewardMean, md.LabeledFrac, md.ModalShare)
	}
	for _, pd := range gb.Diag.Pairs {
		a.Metrics.Agree(run, s.Members[pd.Pair[0]].Name+"/"+s.Members[pd.Pair[1]].Name, pd.Agreement)
	}
	a.Metrics.Stage(run, "", "grade", secs, activity.GetInfo(ctx).Attempt)
	return pipeline.GradeOutput{Key: key, Diag: gb.Diag, Seconds: secs}, nil
}

// check runs the task's checker on items, or returns the verdicts a
// previous try of the same grade stored under key.
func (a *Activities) check(ctx context.Context, c checker.Spec, key string, items []checker.Item) ([]checker.Verdict, error) {
	if b, err := a.Store.Get(ctx, key); err == nil {
		var vs []checker.Verdict
		if err := json.Unmarshal(b, &vs); err == nil && len(vs) == len(items) {
			return vs, nil
		}
	} else if !errors.Is(err, blob.ErrNotFound) {
		return nil, err
	}
	vs, err := checker.Run(ctx, c, items)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(vs)
	if err != nil {
		return nil, err
	}
	return vs, a.Store.Put(ctx, key, b)
}

// Update applies the member's policy update for the round. A retry after the
// update was applied (its result lost) returns the recorded result instead of
// applying it again.
func (a *Activities) Update(ctx context.Context, ref pipeline.MemberRef) (pipeline.UpdateOutput, error) {
	defer a.exclusive(ctx, fmt.Sprintf("round %d update %s", ref.Round, memberName(ref)))()
	h, ok := a.held[heldKey(ref.RunKey(), ref.Spec.Members[ref.Member].Name)]
	if ok && h.round == ref.Round+1 {
		if st, done := h.stats[ref.Round]; done {
			return st, nil
		}
	}
	h, err := a.member(ref)
	if err != nil {
		return pipeline.UpdateOutput{}, err
	}
	return a.applyUpdate(ctx, h, &ref.Spec, ref.Member, ref.Round)
}

func (a *Activities) applyUpdate(ctx context.Context, h *held, s *spec.RunSpec, member, round int) (pipeline.UpdateOutput, error) {
	start := time.Now()
	rb, err := a.loadRollout(ctx, blob.RolloutKey(h.run, round, h.member.Name))
	if err != nil {
		return pipeline.UpdateOutput{}, err
	}
	b, err := a.Store.Get(ctx, blob.GradeKey(h.run, round))
	if err != nil {
		return pipeline.UpdateOutput{}, err
	}
	var gb gradeBlob
	if err := json.Unmarshal(b, &gb); err != nil {
		return pipeline.UpdateOutput{}, fmt.Errorf("grade of round %d: %w", round, err)
	}
	c := rl.ConfigFromSpec(s)
	us, err := rl.Update(h.member, rb.Rollout, gb.Advantages[member], c, round*s.GRPO.StepsPerRound())
	if err != nil {
		err = classify(err, h.member.Name, round)
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) && ae.Type() == pipeline.ErrNonFinite {
			// The weights may be poisoned: forget the member, so that no
			// checkpoint (a stop notice's included) can write them. The run
			// resumes from its last checkpoint.
			delete(a.held, heldKey(h.run, h.member.Name))
		}
		return pipeline.UpdateOutput{}, err
	}
	out := pipeline.UpdateOutput{Stats: us, Seconds: time.Since(start).Seconds(),
		FLOPs: rl.UpdateFLOPs(h.member.Model, rl.ConfigFromSpec(s), us.Tokens)}
	a.Metrics.Stage(h.run, h.member.Name, "update", out.Seconds, activity.GetInfo(ctx).Attempt)
	a.Metrics.Work(h.run, h.member.Name, "update", "trained", us.Tokens, out.FLOPs)
	h.round = round + 1
	h.stats[round] = out
	return out, nil
}

// Replay brings a restored member from round From to round To.
func (a *Activities) Replay(ctx context.Context, in pipeline.ReplayInput) (int, error) {
	defer a.exclusive(ctx, fmt.Sprintf("replay %s rounds %d-%d", memberName(in.MemberRef), in.From+1, in.To))()
	ref := in.MemberRef
	ref.Round = in.From
	h, err := a.member(ref)
	if err != nil {
		return 0, err
	}
	r := in.From
	for ; r < in.To; r++ {
		if _, err := a.applyUpdate(ctx, h, &in.Spec, in.Member, r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// Release forgets the member of an ended run (its checkpoints are stored).
func (a *Activities) Release(ctx context.Context, ref pipeline.MemberRef) error {
	defer a.exclusive(ctx, "release "+memberName(ref))()
	a.forget(heldKey(ref.RunKey(), memberName(ref)))
	return nil
}

// forget drops a held member (a.mu held).
func (a *Activities) forget(key string) {
	delete(a.held, key)
	a.Metrics.Holding(len(a.held))
}

// reclaimClosed forgets the members of runs that the server says are closed
// (completed, failed, cancelled, terminated, timed out) or does not know,
// and returns how many it forgot. A run that continued as new is open (its
// workflow ID's newest run is running). When the server cannot be asked,
// nothing is forgotten. a.mu must be held.
func (a *Activities) reclaimClosed(ctx context.Context) int {
	if a.Client == nil {
		return 0
	}
	open := map[string]bool{}
	n := 0
	for k, h := range a.held {
		if h.workflow == "" {
			continue
		}
		isOpen, asked := open[h.workflow]
		if !asked {
			desc, err := a.Client.DescribeWorkflowExecution(ctx, h.workflow, "")
			var nf *serviceerror.NotFound
			switch {
			case errors.As(err, &nf):
				isOpen = false
			case err != nil:
				isOpen = true // cannot tell: keep it
			default:
				isOpen = desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			}
			open[h.workflow] = isOpen
		}
		if !isOpen {
			if activity.IsActivity(ctx) {
				activity.GetLogger(ctx).Info("released a member of a closed run", "run", h.run, "member", h.member.Name)
			}
			a.forget(k)
			n++
		}
	}
	return n
}

// ReclaimClosed is reclaimClosed for a worker's idle moments: it waits for
// nothing (a busy device means the worker is in use; it tries again later).
// (A function, not a method: every method of Activities is registered as an
// activity.)
func ReclaimClosed(ctx context.Context, a *Activities) int {
	if !a.mu.TryLock() {
		return 0
	}
	defer a.mu.Unlock()
	return a.reclaimClosed(ctx)
}

// Held is how many members a holds. (A function: see ReclaimClosed.)
func Held(a *Activities) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.held)
}

// Checkpoint writes the member's weights, optimizer state and tokenizer at
// the round (objects first, manifest last) and returns the manifest key.
func (a *Activities) Checkpoint(ctx context.Context, ref pipeline.MemberRef) (string, error) {
	defer a.exclusive(ctx, fmt.Sprintf("round %d checkpoint %s", ref.Round, memberName(ref)))()
	h, err := a.member(ref)
	if err != nil {
		return "", err
	}
	return a.writeCheckpoint(ctx, h, h.run, ref.Round)
}

func (a *Activities) writeCheckpoint(ctx context.Context, h *held, run string, round int) (string, error) {
	tmp, err := os.MkdirTemp("", "corl-ckpt-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := train.SaveMember(h.member, tmp); err != nil {
		return "", err
	}
	files := map[string][]byte{}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(tmp, e.Name()))
		if err != nil {
			return "", err
		}
		files[e.Name()] = b
	}
	return blob.WriteCheckpoint(ctx, a.Store, blob.CheckpointPrefix(run, round, h.member.Name), files,
		map[string]string{"run": run, "member": h.member.Name, "round": fmt.Sprint(round)})
}

// CheckpointAll writes every member a holds at its current round: what a
// worker does on a stop notice (SIGTERM) before it exits. (A function, not a
// method: every method of Activities is registered as an activity.)
func CheckpointAll(ctx context.Context, a *Activities) []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for _, h := range a.held {
		if _, err := a.writeCheckpoint(ctx, h, h.run, h.round); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint %s/%s: %w", h.run, h.member.Name, err))
		}
	}
	return errs
}

// Evaluate runs greedy pass@1 of the member on the held-out problems, in the
// original wording and in the member's own view.
func (a *Activities) Evaluate(ctx context.Context, ref pipeline.MemberRef) (pipeline.EvalOutput, error) {
	defer a.exclusive(ctx, fmt.Sprintf("round %d evaluate %s", ref.Round, memberName(ref)))()
	h, err := a.member(ref)
	if err != nil {
		return pipeline.EvalOutput{}, err
	}
	d, err := a.runData(&ref.Spec)
	if err != nil {
		return pipeline.EvalOutput{}, err
	}
	start := time.Now()
	o := evaluate.OptionsFromSpec(&ref.Spec)
	key, err := evalCacheKey(a.Backend.Name(), h.member, d.Eval, o)
	if err != nil {
		return pipeline.EvalOutput{}, err
	}
	out, hit := a.cachedEval(ctx, key)
	if !hit {
		res, own, err := train.EvaluateMember(h.member, d.Eval, o)
		if err != nil {
			return pipeline.EvalOutput{}, err
		}
		truth := record.Truth(d.Eval, o.Answers)
		out = pipeline.EvalOutput{PassAt1: res.PassAt1, ByTask: res.ByTask, Correct: res.Correct, Answers: res.Answers,
			View: h.member.View, PassAt1OwnView: own.PassAt1, SampledPassAt1: res.SampledPassAt1, MajAtK: res.MajAtK,
			SampledByTask: res.SampledByTask, PassAt1CI: res.PassAt1CI, SampledCI: res.SampledCI,
			Pool: res.CohortAnswers(), Truth: truth}
		if key != "" {
			// A failed store only costs a later recomputation.
			if b, err := json.Marshal(out); err == nil {
				_ = a.Store.Put(ctx, key, b)
			}
		}
	}
	a.Metrics.Stage(h.run, h.member.Name, "evaluate", time.Since(start).Seconds(), activity.GetInfo(ctx).Attempt)
	a.Metrics.Eval(h.run, h.member.Name, out.PassAt1, out.PassAt1OwnView)
	return out, nil
}
