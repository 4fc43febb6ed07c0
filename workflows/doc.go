// Package workflows holds corl's deterministic workflows: CohortRun, one per
// training run, and Sweep, a grid of them. The workflow keeps only small
// state (round, where each member lives, checkpoint keys, metric
// summaries); everything large travels through the blob store as keys. It
// does no I/O, reads no configuration and iterates no maps.
//
// # Version markers
//
// A change to what the workflow does (which commands it issues, in what
// order) is behind a workflow.GetVersion marker, so that a run started
// before the change replays its old branch. Each marker below took its new
// branch in a recorded history under testdata/ (TestEveryVersionBranchIsRecorded),
// and cohortrun-history-before-version-markers.json replays every old one.
//
//	marker                 added       old branch (DefaultVersion)            new branch's history
//	validate-spec          2026-11-30  no spec validation step               cohortrun-history.json
//	placement-by-capacity  2026-11-30  placed through the pool queue only    cohortrun-history.json
//	release-members        2026-11-30  members stay on workers at the end    cohortrun-history.json
//	watch-queues           2026-12-01  server retries, no lost-worker timer  cohortrun-history.json
//	release-on-failure     2026-12-01  a failed run keeps its members        cohortrun-history-failed.json
//	plan-by-budget         2026-12-01  a budget runs the spec's schedule     cohortrun-history-plan-by-budget.json
//	skip-empty-eval        2026-12-01  evaluates without evaluation problems cohortrun-history-no-eval-set.json
//	write-records          2026-12-07  records only in the history           cohortrun-history.json
//
// Retiring a marker: its old branch may go once no open run can replay it,
// that is once every CohortRun started before the marker's date has closed
// (temporal workflow list --query 'WorkflowType="CohortRun" AND
// ExecutionStatus="Running" AND StartTime < "<date>"' lists none) and the
// namespace's retention has passed for those that did. Then, in one
// commit: delete the old branch, make the call
// GetVersion(ctx, marker, 1, 1) (a history without the marker then fails
// at once with a clear error rather than replaying wrongly), remove the
// marker's row here, and drop or re-record the histories that took the
// old branch. A new marker gets a row here and a recorded history (the
// e2e tests' -update) in the commit that adds it.
package workflows
