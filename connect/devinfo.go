package connect

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/corl-project/corl/internal/atomicfile"
)

// DevInfo is what a running `corl dev` publishes so that `corl run`,
// `status` and `watch` started from any directory find its server and blob
// store (instead of a fresh ./corl-data store that holds nothing).
type DevInfo struct {
	Address  string `json:"address"`
	StoreDir string `json:"store_dir"`
	Dir      string `json:"dir"`
	PID      int    `json:"pid"`
}

// DevInfoPath is $XDG_CONFIG_HOME/corl/dev.json (or ~/.config/corl/dev.json).
func DevInfoPath(getenv func(string) string) (string, error) {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return "", errors.New("neither XDG_CONFIG_HOME nor HOME is set")
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "corl", "dev.json"), nil
}

// PublishDev writes info where DevInfoPath says.
func PublishDev(getenv func(string) string, info DevInfo) error {
	p, err := DevInfoPath(getenv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(info, "", "  ")
	return atomicfile.WriteBytes(p, b)
}

// WithdrawDev removes the published info if this process wrote it.
func WithdrawDev(getenv func(string) string) {
	if info, ok := RunningDev(getenv); ok && info.PID == os.Getpid() {
		if p, err := DevInfoPath(getenv); err == nil {
			os.Remove(p)
		}
	}
}

// RunningDev returns the published info of a `corl dev` that is still
// running (false when there is none, or its process is gone).
func RunningDev(getenv func(string) string) (DevInfo, bool) {
	p, err := DevInfoPath(getenv)
	if err != nil {
		return DevInfo{}, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return DevInfo{}, false
	}
	var info DevInfo
	if json.Unmarshal(b, &info) != nil || info.PID <= 0 || info.Address == "" {
		return DevInfo{}, false
	}
	if err := syscall.Kill(info.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return DevInfo{}, false
	}
	return info, true
}

// String says where the dev environment is.
func (d DevInfo) String() string {
	return fmt.Sprintf("corl dev (pid %d) at %s, store %s", d.PID, d.Address, d.StoreDir)
}
