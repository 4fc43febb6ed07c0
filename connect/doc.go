// Package connect reaches what a corl command talks to: the Temporal
// cluster (address, namespace, API key, mTLS) and the blob store (local or
// S3), from a connection file, the environment and flags read through
// config's layering; and the running corl dev server's address, which
// corl dev publishes so other commands find it.
package connect
