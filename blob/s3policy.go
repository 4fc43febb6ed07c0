package blob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// GrantOnly makes the bucket (created when missing, with the credentials s
// holds: the store's administrator's) grant every S3 action on it and its
// objects to the accounts named by accessKeys and to no one else: the
// bucket policy of a shared cluster's store, where each worker's account is
// named and an anonymous request is refused.
func (s *S3) GrantOnly(ctx context.Context, accessKeys []string) error {
	if len(accessKeys) == 0 {
		return fmt.Errorf("s3 bucket policy for %s: no account to grant", s.bucket)
	}
	if _, err := s.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		var owned *types.BucketAlreadyOwnedByYou
		var exists *types.BucketAlreadyExists
		if !errors.As(err, &owned) && !errors.As(err, &exists) {
			return fmt.Errorf("s3 create bucket %s: %w", s.bucket, err)
		}
	}
	policy, err := GrantPolicy(s.bucket, accessKeys)
	if err != nil {
		return err
	}
	if _, err := s.c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(s.bucket), Policy: aws.String(policy)}); err != nil {
		return fmt.Errorf("s3 put bucket policy %s: %w", s.bucket, err)
	}
	return nil
}

// GrantPolicy is the bucket policy GrantOnly sets: one Allow statement for
// the named accounts, over the bucket and its objects. Nothing else is
// allowed, so an anonymous request is denied.
func GrantPolicy(bucket string, accessKeys []string) (string, error) {
	for _, k := range accessKeys {
		if k == "" || k == "*" || strings.ContainsAny(k, " \"") {
			return "", fmt.Errorf("s3 bucket policy for %s: %q is not an account's access key ID", bucket, k)
		}
	}
	type statement struct {
		Sid       string              `json:"Sid"`
		Effect    string              `json:"Effect"`
		Principal map[string][]string `json:"Principal"`
		Action    []string            `json:"Action"`
		Resource  []string            `json:"Resource"`
	}
	p := struct {
		Version   string      `json:"Version"`
		Statement []statement `json:"Statement"`
	}{"2012-10-17", []statement{{Sid: "corl-workers", Effect: "Allow", Principal: map[string][]string{"AWS": accessKeys},
		Action: []string{"s3:*"}, Resource: []string{"arn:aws:s3:::" + bucket, "arn:aws:s3:::" + bucket + "/*"}}}}
	b, err := json.Marshal(p)
	return string(b), err
}

// AnonymousStatus is the HTTP status an unsigned request to list the bucket
// at endpoint gets (path style): 403 where the store refuses anonymous
// access.
func AnonymousStatus(ctx context.Context, endpoint, bucket string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/")+"/"+bucket+"/", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("anonymous request to %s: %w", endpoint, err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
