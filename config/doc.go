// Package config reads a run specification: one YAML (or JSON) file, CORL_*
// environment variables and flags, merged by viper in this one place into a
// typed, validated, JSON-serialisable RunSpec. Unknown keys and bad values are
// errors that name the key. Names follow TRL/verl where they exist.
package config
