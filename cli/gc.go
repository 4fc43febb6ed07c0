package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/blob"
)

func newGCCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		cf        connFlags
		olderThan time.Duration
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Delete a blob store's garbage: interrupted checkpoints' objects and temporary files",
		Long: `Finds what no reader will ever use in the blob store (local or S3) and deletes
it: the objects of checkpoints that were killed before their manifest was
written, objects a checkpoint's manifest does not name, and a local store's
temporary files left by killed writers. Only what is older than --older-than
is touched, so checkpoints being written now are left alone; complete
checkpoints, rollouts, grades and uploaded bases are never deleted. --dry-run
lists what would go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan < 0 {
				return fmt.Errorf("--older-than: must not be negative, got %s", olderThan)
			}
			conn, err := cf.load(getenv)
			if err != nil {
				return err
			}
			store, err := conn.OpenStore(cmd.Context())
			if err != nil {
				return err
			}
			l, ok := store.(blob.Lister)
			if !ok {
				return fmt.Errorf("store %s cannot be listed", store.URI(""))
			}
			g, err := blob.Collect(cmd.Context(), l, olderThan, dryRun)
			verb := "deleted"
			if dryRun {
				verb = "would delete"
			}
			for _, o := range append(g.Orphans, g.Temp...) {
				fmt.Fprintf(stdio.Out, "%s %s (%d bytes, %s old)\n", verb, store.URI(o.Key), o.Size, time.Since(o.Modified).Round(time.Second))
			}
			fmt.Fprintf(stdio.Out, "%s %d orphaned checkpoint objects and %d temporary files, %.1f MB, in %s\n",
				verb, len(g.Orphans), len(g.Temp), float64(g.Bytes())/1e6, store.URI(""))
			return err
		},
	}
	cf.register(cmd)
	cmd.Flags().DurationVar(&olderThan, "older-than", time.Hour, "touch only garbage older than this (a checkpoint being written is younger)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted; delete nothing")
	return cmd
}
