package checker

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == sandboxArg {
		launch(os.Args[2:])
	}
}

// launch applies the limits and Landlock to this thread and executes the
// program in its place; it never returns.
func launch(args []string) {
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "corl checker sandbox: %v\n", err)
		os.Exit(126)
	}
	if len(args) < 4 {
		fail(fmt.Errorf("usage: DIR MEMORY_MB PROCESSES PROGRAM ARGS..."))
	}
	runtime.LockOSThread() // Landlock and no_new_privs hold for this thread, which executes the program
	dir := args[0]
	mem, err1 := strconv.ParseUint(args[1], 10, 64)
	procs, err2 := strconv.ParseUint(args[2], 10, 64)
	if err1 != nil || err2 != nil {
		fail(fmt.Errorf("bad limits %q %q", args[1], args[2]))
	}
	if os.Geteuid() == 0 {
		if err := dropTo(nobody); err != nil {
			fail(err)
		}
	}
	if err := landlock(dir); err != nil {
		fail(err)
	}
	env := os.Environ()
	// The limits last, just before the program replaces this one: the Go
	// runtime here must not meet the address-space limit.
	for _, l := range []struct {
		res int
		max uint64
	}{{unix.RLIMIT_NPROC, procs}, {unix.RLIMIT_CORE, 0}, {unix.RLIMIT_AS, mem << 20}} {
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.max, Max: l.max}); err != nil {
			fail(fmt.Errorf("limit %d: %w", l.res, err))
		}
	}
	if err := syscall.Exec(args[3], args[3:], env); err != nil {
		fail(fmt.Errorf("exec %s: %w", args[3], err))
	}
}

// dropTo makes the process the unprivileged user uid (and group, no
// supplementary groups).
func dropTo(uid int) error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(uid); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	return nil
}

// landlock lets this thread (and what it executes) write only under dir
// (and to /dev/null); reading and executing stay allowed.
func landlock(dir string) error {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return fmt.Errorf("Landlock is not available here (%v): the checker cannot be kept from writing outside its directory", errno)
	}
	var write uint64 = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	fileRights := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE)
	if abi >= 2 {
		write |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		write |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
		fileRights |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	attr := struct{ handledFS uint64 }{write} // the ruleset's first field, as in ABI 1
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("Landlock ruleset: %v", errno)
	}
	for _, r := range []struct {
		path   string
		rights uint64
	}{{dir, write}, {"/dev/null", fileRights}} {
		pfd, err := unix.Open(r.path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("Landlock rule for %s: %w", r.path, err)
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: r.rights, Parent_fd: int32(pfd)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("Landlock rule for %s: %v", r.path, errno)
		}
		unix.Close(pfd)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("Landlock restrict: %v", errno)
	}
	return nil
}

// isolation is the launcher's namespaces: a new network namespace, and
// when corl is not root a user namespace mapping this user, which
// unprivileged network namespaces need. (As root, the launcher becomes the
// unprivileged user nobody, owner of dir, before the program runs.)
func isolation(dir string) (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Setpgid: true}
	if os.Geteuid() == 0 {
		// The launcher (corl's own binary, perhaps where nobody may not
		// look) starts as root and becomes nobody before the program.
		os.Chown(dir, nobody, nobody)
		return attr, nil
	}
	attr.Cloneflags |= syscall.CLONE_NEWUSER
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	return attr, nil
}

const nobody = 65534
