package devcli

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cli"
)

// newServerStoreCmd is `corl server store-setup`: the store's bucket for a
// shared cluster, made with the store administrator's credentials (the
// environment's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), with a
// bucket policy that grants the workers' accounts and no one else, and a
// check that an anonymous request is refused.
func newServerStoreCmd(stdio cli.IO) *cobra.Command {
	var c blob.S3Config
	var grant string
	cmd := &cobra.Command{
		Use:   "store-setup",
		Short: "Create the store's bucket with a policy granting the workers' accounts only; check anonymous access is refused",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			keys := commaList(grant)
			c.PathStyle = true
			s, err := blob.NewS3(ctx, c)
			if err != nil {
				return err
			}
			if err := s.GrantOnly(ctx, keys); err != nil {
				return err
			}
			code, err := blob.AnonymousStatus(ctx, c.Endpoint, c.Bucket)
			if err != nil {
				return err
			}
			if code != http.StatusForbidden {
				return fmt.Errorf("store %s bucket %s: an anonymous request got HTTP %d, not 403: the bucket is open to anyone", c.Endpoint, c.Bucket, code)
			}
			fmt.Fprintf(stdio.Err, "store %s bucket %s: granted to %s; anonymous access refused (HTTP 403)\n", c.Endpoint, c.Bucket, strings.Join(keys, ", "))
			return nil
		},
	}
	cmd.Flags().StringVar(&c.Endpoint, "endpoint", "http://127.0.0.1:7070", "the S3 endpoint (path-style addressing)")
	cmd.Flags().StringVar(&c.Bucket, "bucket", "corl", "the bucket")
	cmd.Flags().StringVar(&c.Region, "region", "us-east-1", "the region")
	cmd.Flags().StringVar(&grant, "grant", "", "comma-separated access key IDs of the accounts the bucket is granted to (required)")
	cmd.MarkFlagRequired("grant")
	return cmd
}
