package cpu

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory implements gpu.MemoryReporter from /proc/meminfo: MemAvailable
// and MemTotal (Linux; elsewhere an error).
func (be *Backend) Memory() (free, total int64, err error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0, fmt.Errorf("host memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemAvailable:":
			free = kb << 10
		case "MemTotal:":
			total = kb << 10
		}
	}
	if free == 0 || total == 0 {
		return 0, 0, fmt.Errorf("host memory: /proc/meminfo has no MemAvailable and MemTotal")
	}
	return free, total, sc.Err()
}
