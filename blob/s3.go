package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3Config locates a bucket. Credentials come from the standard AWS chain
// (environment, shared files, instance roles); they are never part of a run
// spec, a log line or workflow history.
type S3Config struct {
	Endpoint  string        `json:"endpoint,omitempty" mapstructure:"endpoint"` // empty: AWS
	Region    string        `json:"region" mapstructure:"region"`
	Bucket    string        `json:"bucket" mapstructure:"bucket"`
	Prefix    string        `json:"prefix,omitempty" mapstructure:"prefix"`
	PathStyle bool          `json:"path_style" mapstructure:"path_style"`
	Attempts  int           `json:"max_attempts" mapstructure:"max_attempts"`       // per request, retries included (0: 10)
	Timeout   time.Duration `json:"attempt_timeout" mapstructure:"attempt_timeout"` // per attempt (0: 60s)
}

// S3 is a Store in an S3-compatible bucket.
type S3 struct {
	c      *s3.Client
	bucket string
	prefix string
}

// NewS3 connects to the bucket (no request is made until first use).
func NewS3(ctx context.Context, c S3Config) (*S3, error) {
	if c.Bucket == "" {
		return nil, fmt.Errorf("s3: bucket is required")
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Attempts <= 0 {
		c.Attempts = 10
	}
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	httpClient := awshttp.NewBuildableClient().WithTimeout(c.Timeout)
	cfg, err := awsconfig.LoadDefaultConfig(ctx,
		awsconfig.WithRegion(c.Region),
		awsconfig.WithHTTPClient(httpClient),
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = c.Attempts
				o.MaxBackoff = 5 * time.Second
				// Injected faults and flaky proxies: keep retrying rather than
				// running out of client-side retry tokens.
				o.RateLimiter = noRateLimit{}
			})
		}))
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
		// Checksums only when the operation requires them: some
		// S3-compatible servers reject the newer default trailers.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &S3{c: client, bucket: c.Bucket, prefix: strings.Trim(c.Prefix, "/")}, nil
}

type noRateLimit struct{}

func (noRateLimit) GetToken(context.Context, uint) (func() error, error) {
	return func() error { return nil }, nil
}
func (noRateLimit) AddTokens(uint) error { return nil }

func (s *S3) key(k string) string {
	if s.prefix == "" {
		return k
	}
	return s.prefix + "/" + k
}

// Put implements Store. An S3 PUT is atomic: the object appears whole or not at all.
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	_, err := s.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key(key)),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
	if err != nil {
		return fmt.Errorf("s3 put %s: %w", s.URI(key), err)
	}
	return nil
}

// Get implements Store.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key(key))})
	if err != nil {
		var nsk *types.NoSuchKey
		var re *smithyhttp.ResponseError
		if errors.As(err, &nsk) || (errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound) {
			return nil, fmt.Errorf("%s: %w", s.URI(key), ErrNotFound)
		}
		return nil, fmt.Errorf("s3 get %s: %w", s.URI(key), err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("s3 get %s: %w", s.URI(key), err)
	}
	if out.ContentLength != nil && int64(len(b)) != *out.ContentLength {
		return nil, fmt.Errorf("s3 get %s: short read (%d of %d bytes)", s.URI(key), len(b), *out.ContentLength)
	}
	return b, nil
}

// EnsureBucket creates the bucket if it does not exist. A store that
// refuses the credentials (a wrong key or secret, or a bucket policy that
// does not grant them) is an error naming the endpoint, the bucket and the
// access key ID, never the secret: a worker started with them fails at
// once rather than at its first checkpoint.
func (s *S3) EnsureBucket(ctx context.Context) error {
	_, err := s.c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)})
	if err == nil {
		return nil
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusForbidden || re.HTTPStatusCode() == http.StatusUnauthorized) {
		return s.refused(ctx, err)
	}
	if _, err := s.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		var owned *types.BucketAlreadyOwnedByYou
		if errors.As(err, &owned) {
			return nil
		}
		if errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusForbidden || re.HTTPStatusCode() == http.StatusUnauthorized) {
			return s.refused(ctx, err)
		}
		return fmt.Errorf("s3 create bucket %s: %w", s.bucket, err)
	}
	return nil
}

// refused is EnsureBucket's error for credentials the store refused.
func (s *S3) refused(ctx context.Context, err error) error {
	key := "(no credentials found)"
	if p := s.c.Options().Credentials; p != nil {
		if c, cerr := p.Retrieve(ctx); cerr == nil {
			key = c.AccessKeyID
		}
	}
	where := "AWS"
	if e := s.c.Options().BaseEndpoint; e != nil {
		where = *e
	}
	return fmt.Errorf("s3 store s3://%s at %s refuses access key ID %s: the key or secret (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) is wrong, or the bucket's policy does not grant it: %w",
		s.bucket, where, key, err)
}

// URI implements Store.
func (s *S3) URI(key string) string { return "s3://" + s.bucket + "/" + s.key(key) }
